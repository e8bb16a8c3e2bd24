//! What a command acts from: the context read once (caller's directory, global options,
//! repository, rules), acting on a card under its lock with its tree verified again, and the
//! records of trees kardwt finds rather than makes (a plain `git worktree add`, `adopt`), and the
//! disk as the agent command guard asks about it, and where the hooks have nothing to do.
pub(crate) mod context;
pub(crate) mod disk;
pub(crate) mod foreign;
pub(crate) mod hold;
pub(crate) mod unmanaged;

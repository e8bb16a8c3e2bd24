//! The post-checkout hook (`git kardwt hook post-checkout`): with the hooks installed, a plain
//! `git worktree add` is recorded, shared and prepared, and a failure fails `git worktree add`
//! itself with a verdict a dispatcher can act on.
mod base_without_origin_head;
mod exit_codes;
mod failure_verdict;
mod one_line;
mod seeding;
mod writes;

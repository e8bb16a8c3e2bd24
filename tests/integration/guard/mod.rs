//! `git kardwt guard`: the agent command guard end to end against real managed worktrees, and
//! under attack.
mod attack;
mod end_to_end;
mod globs;
mod human_steps;

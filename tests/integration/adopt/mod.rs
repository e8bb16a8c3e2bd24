//! `git kardwt adopt`: an existing linked worktree taken over only when an `adoptions` entry
//! declares exactly that card, path, common dir and branch.
mod exact_match;

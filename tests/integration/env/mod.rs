//! `git kardwt env`: a tree's facts (card, branch, path, ports) under the names the hooks get,
//! as shell, dotenv or JSON.
mod run_script;

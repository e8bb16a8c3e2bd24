//! The rules file and `git kardwt config check`: strict decoding (every error exits 2 naming the
//! file and the key), values read as data that never become an option of git, and fuzzing.
mod fuzz;
mod strict;
mod values_as_data;

//! `git kardwt install-hooks` and `uninstall-hooks`: the shims where git really looks, chaining
//! the user's own hook and the hook managers', and the binary each shim names.
mod bare_path;
mod chaining;

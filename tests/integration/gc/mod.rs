//! `git kardwt gc`: conservative garbage collection, a dry run unless `--apply`, collecting only
//! clean trees whose work landed, `--branches`, `--idle`, and the release of orphaned claims.
mod abandoned;
mod branches;
mod collect;
mod generated;
mod orphan_claims;

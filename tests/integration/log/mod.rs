//! `git kardwt log`: the event log, one `seeded` event per seeding, in aligned columns.
mod events;

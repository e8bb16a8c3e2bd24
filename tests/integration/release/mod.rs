//! `git kardwt release`: a tree handed back without removing it, as a runner that deletes trees
//! itself needs.
mod keeps_the_tree;

//! The cache tree (the index's TREE extension) git's own checkout leaves in a new index, built
//! from the checked-out commit's tree objects as git's `prime_cache_tree` builds it after
//! `reset --hard`, and the index written with it: a tree kardwt checked out is then HEAD's tree
//! to git (`status`, `commit`, the gap check) at one lookup, as a tree git checked out is.
//! [`build`] is pure over a reader of tree objects.
use std::io::Write as _;
use std::path::Path;

use anyhow::{Context as _, Result};
use gix::index::extension::Tree;
use gix::ObjectId;

/// One entry of a tree object: its name, whether it is a tree, and its object id.
pub(super) struct Entry {
    pub name: Vec<u8>,
    pub is_tree: bool,
    pub id: ObjectId,
}

/// The cache tree of tree `root`, every directory valid, as git primes it: each directory's
/// entry count is the number of non-tree entries beneath it, recursively, and its children are
/// in git's order (shorter names first, then bytewise). `read` lists one tree object.
pub(super) fn build(
    root: ObjectId,
    read: &mut impl FnMut(&ObjectId) -> Result<Vec<Entry>>,
) -> Result<Tree> {
    node(Vec::new(), root, read)
}

fn node(
    name: Vec<u8>,
    id: ObjectId,
    read: &mut impl FnMut(&ObjectId) -> Result<Vec<Entry>>,
) -> Result<Tree> {
    let mut count: u32 = 0;
    let mut children = Vec::new();
    for e in read(&id)? {
        if e.is_tree {
            let child = node(e.name, e.id, read)?;
            count += child.num_entries.unwrap_or(0);
            children.push(child);
        } else {
            count += 1;
        }
    }
    children.sort_by(|a: &Tree, b: &Tree| {
        (a.name.len(), a.name.as_slice()).cmp(&(b.name.len(), b.name.as_slice()))
    });
    Ok(Tree {
        name: name.into_iter().collect(),
        id,
        num_entries: Some(count),
        children,
    })
}

/// The cache tree of `root` read from `repo`'s objects.
pub(super) fn of(repo: &gix::Repository, root: ObjectId) -> Result<Tree> {
    build(root, &mut |id| {
        let tree = repo
            .find_tree(*id)
            .with_context(|| format!("cannot read tree {id}"))?;
        tree.iter()
            .map(|e| {
                let e = e.with_context(|| format!("cannot decode tree {id}"))?;
                Ok(Entry {
                    name: e.filename().to_vec(),
                    is_tree: e.mode().is_tree(),
                    id: e.oid().to_owned(),
                })
            })
            .collect()
    })
}

/// Write `state` to the index file at `path` as git writes a fresh one: its entries, then the
/// cache tree `tree` as its one extension, then the checksum; atomically, through `index.lock`.
pub(super) fn write_index(path: &Path, state: &gix::index::State, tree: &Tree) -> Result<()> {
    let mut bytes = Vec::with_capacity(state.entries().len() * 96 + 4096);
    let mut hashed = gix::hash::io::Write::new(&mut bytes, state.object_hash());
    let only_entries = gix::index::write::Options {
        extensions: gix::index::write::Extensions::None,
        skip_hash: false,
    };
    state
        .write_to(&mut hashed, only_entries)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    tree.write_to(&mut hashed)?;
    let sum = hashed
        .hash
        .try_finalize()
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    bytes.extend_from_slice(sum.as_slice());
    let mut lock = gix::lock::File::acquire_to_update_resource(
        path,
        gix::lock::acquire::Fail::Immediately,
        None,
        0,
    )
    .with_context(|| format!("cannot lock {}", path.display()))?;
    lock.write_all(&bytes)
        .with_context(|| format!("cannot write {}.lock", path.display()))?;
    lock.commit()
        .map_err(|e| anyhow::anyhow!("{e}"))
        .with_context(|| format!("cannot rename {}.lock into place", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn id(n: u8) -> ObjectId {
        ObjectId::from_bytes_or_panic(&[n; 20])
    }

    fn entry(name: &str, is_tree: bool, n: u8) -> Entry {
        Entry {
            name: name.as_bytes().to_vec(),
            is_tree,
            id: id(n),
        }
    }

    #[test]
    fn counts_every_file_beneath_and_orders_children_as_git_does() {
        // root: a.txt, zz/ (2 files), b/ (c/ with 1 file, d.txt), empty/ (nothing)
        let mut trees: HashMap<ObjectId, Vec<Entry>> = HashMap::new();
        trees.insert(
            id(1),
            vec![
                entry("a.txt", false, 10),
                entry("b", true, 2),
                entry("empty", true, 5),
                entry("zz", true, 3),
            ],
        );
        trees.insert(id(2), vec![entry("c", true, 4), entry("d.txt", false, 11)]);
        trees.insert(id(3), vec![entry("x", false, 12), entry("y", false, 13)]);
        trees.insert(id(4), vec![entry("e", false, 14)]);
        trees.insert(id(5), vec![]);
        let mut reads = 0;
        let t = build(id(1), &mut |i| {
            reads += 1;
            Ok(trees.remove(i).expect("each tree read once"))
        })
        .unwrap();
        assert_eq!(reads, 5);
        assert_eq!(t.num_entries, Some(5));
        assert!(t.name.is_empty());
        let names: Vec<&[u8]> = t.children.iter().map(|c| c.name.as_slice()).collect();
        assert_eq!(names, [&b"b"[..], b"zz", b"empty"], "shorter names first");
        let counts: Vec<_> = t.children.iter().map(|c| c.num_entries).collect();
        assert_eq!(counts, [Some(2), Some(2), Some(0)]);
        assert_eq!(t.children[0].children[0].num_entries, Some(1));
        assert_eq!(t.children[0].children[0].id, id(4));
    }

    #[test]
    fn a_tree_that_cannot_be_read_fails_the_whole_build() {
        let err = build(id(1), &mut |_| anyhow::bail!("gone")).unwrap_err();
        assert!(err.to_string().contains("gone"));
    }
}

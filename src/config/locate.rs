//! Where an error found across fields points: the node a key path names, found by reading
//! the text again down to it and failing there, so that yaml_serde reports its line and column.
use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess};

use super::read::{caught, fail, join_key, Node, Pick, Raised, Read, Reader};

/// A step from the document root.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Seg {
    Key(&'static str),
    Index(usize),
}

/// `worktree.prepare.argv[1]`.
pub(super) fn display_path(segs: &[Seg]) -> String {
    let mut out = String::new();
    for seg in segs {
        match seg {
            Seg::Key(k) => out = join_key(&out, k),
            Seg::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

/// Re-read `text` and fail at the node `segs` designates (at its key when `at_key`), so that
/// yaml_serde reports that node's position. `None` when the node is not found.
pub(super) fn locate(text: &str, segs: &[Seg], at_key: bool) -> Option<yaml_serde::Location> {
    let read =
        || Reader(Locate { segs, at_key }).deserialize(yaml_serde::Deserializer::from_str(text));
    match caught(read) {
        Err((err, Some(_))) => err.location(),
        _ => None,
    }
}

/// Walks down to `segs` and fails there: at the node reached when `segs` is empty.
pub(super) struct Locate<'a> {
    pub segs: &'a [Seg],
    pub at_key: bool,
}

impl<'a> Locate<'a> {
    fn rest(&self) -> Reader<Locate<'a>> {
        Reader(Locate {
            segs: &self.segs[1..],
            at_key: self.at_key,
        })
    }
}

impl<'de> Read<'de> for Locate<'_> {
    type Out = ();

    fn scalar(self, _: Node<'_>) -> Result<(), Raised> {
        if self.segs.is_empty() {
            Err(Raised::from(super::node_error::NodeError::Here))
        } else {
            Ok(())
        }
    }

    fn seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let Some(Seg::Index(want)) = self.segs.first().copied() else {
            return self.scalar(Node::List).map_err(fail);
        };
        let mut index = 0;
        loop {
            let more = if index == want {
                seq.next_element_seed(self.rest())?.is_some()
            } else {
                seq.next_element::<IgnoredAny>()?.is_some()
            };
            if !more {
                return Ok(());
            }
            index += 1;
        }
    }

    fn map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let Some(Seg::Key(want)) = self.segs.first().copied() else {
            return self.scalar(Node::Map).map_err(fail);
        };
        let fire = self.at_key && self.segs.len() == 1;
        while let Some(found) = map.next_key_seed(Reader(Pick { want, fire }))? {
            if found {
                map.next_value_seed(self.rest())?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

//! Strict reading of YAML nodes for the rules file: every node is read with `deserialize_any`
//! and handed to one [`Read`], which refuses any kind of node it does not expect (an explicit
//! null, `900` or `true` for a string, `"900"` for a number) while the node is being read, so
//! yaml_serde marks the error with the node's line and column.
use std::cell::RefCell;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, IgnoredAny, MapAccess, SeqAccess,
    VariantAccess, Visitor,
};
use serde::Deserialize;

use super::names::{quote, QUOTE_CHARS};
use super::node_error::NodeError;

/// What a reader refused while a node was read: why and, when it is about the key being read
/// (unknown, duplicate), that key's label, which ends the key path.
#[derive(Debug)]
pub(super) struct Raised {
    pub key: Option<String>,
    pub why: NodeError,
}

impl From<NodeError> for Raised {
    fn from(why: NodeError) -> Raised {
        Raised { key: None, why }
    }
}

thread_local! {
    /// The refusal behind the error being unwound on this thread. serde carries an error only
    /// as text (which yaml_serde then locates), so the typed refusal waits here for [`caught`]
    /// rather than being coded into that text. Nothing in the schema catches an error (no
    /// untagged enums, no `flatten`): the error that ends a read is the one raised last.
    static RAISED: RefCell<Option<Raised>> = const { RefCell::new(None) };
}

pub(super) fn fail<E: de::Error>(raised: impl Into<Raised>) -> E {
    let raised = raised.into();
    let err = E::custom(&raised.why);
    RAISED.with(|slot| *slot.borrow_mut() = Some(raised));
    err
}

/// Run one read; on failure, its error and the refusal a reader raised (`None`: the error is
/// the parser's own).
pub(super) fn caught<T, E>(read: impl FnOnce() -> Result<T, E>) -> Result<T, (E, Option<Raised>)> {
    let take = || RAISED.with(|slot| slot.borrow_mut().take());
    take();
    let result = read();
    let raised = take();
    result.map_err(|err| (err, raised))
}

/// A refusal of the key being read (unknown, duplicate): the key path ends with `label`.
fn about_key(label: &str, why: NodeError) -> Raised {
    Raised {
        key: Some(label.to_owned()),
        why,
    }
}

pub(super) fn join_key(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

/// A key as a key path shows it: cut after [`QUOTE_CHARS`] characters.
pub(super) fn key_label(key: &str) -> String {
    let mut chars = key.chars();
    let shown: String = chars.by_ref().take(QUOTE_CHARS).collect();
    if chars.next().is_some() {
        format!("{shown}…")
    } else {
        shown
    }
}

/// A node as a reader sees it.
pub(super) enum Node<'a> {
    Null,
    Bool(bool),
    /// Any integer of 64 bits, signed or not.
    Int(i128),
    /// An integer beyond 64 bits, as written.
    Big(String),
    Float(f64),
    Str(&'a str),
    List,
    Map,
    Tagged(String),
}

/// What a node is, for "expected X, found Y"; values quoted with [`quote`].
pub(super) fn describe(node: &Node<'_>) -> String {
    match node {
        Node::Null => "an explicit null".to_owned(),
        Node::Bool(b) => format!("a boolean ({b})"),
        Node::Int(n) => format!("an integer ({n})"),
        Node::Big(n) => format!("an integer ({})", quote(n)),
        Node::Float(f) => format!("a float ({f:?})"),
        Node::Str(s) => format!("a string ({})", quote(s)),
        Node::List => "a list".to_owned(),
        Node::Map => "a mapping".to_owned(),
        Node::Tagged(tag) => format!("a tagged value ({})", quote(tag)),
    }
}

pub(super) fn wrong(expected: &str, node: &Node<'_>) -> NodeError {
    NodeError::Wrong {
        expected: expected.to_owned(),
        found: describe(node),
    }
}

/// How one node is read. A list or mapping a reader does not take is skipped, then judged
/// like a scalar.
pub(super) trait Read<'de>: Sized {
    type Out;

    fn scalar(self, node: Node<'_>) -> Result<Self::Out, Raised>;

    fn seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Out, A::Error> {
        IgnoredAny.visit_seq(seq)?;
        self.scalar(Node::List).map_err(fail)
    }

    fn map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Out, A::Error> {
        IgnoredAny.visit_map(map)?;
        self.scalar(Node::Map).map_err(fail)
    }
}

/// The one visitor: hands any node to its [`Read`].
pub(super) struct Reader<R>(pub R);

impl<'de, R: Read<'de>> Reader<R> {
    fn node<E: de::Error>(self, node: Node<'_>) -> Result<R::Out, E> {
        self.0.scalar(node).map_err(fail)
    }
}

impl<'de, R: Read<'de>> DeserializeSeed<'de> for Reader<R> {
    type Value = R::Out;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<R::Out, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, R: Read<'de>> Visitor<'de> for Reader<R> {
    type Value = R::Out;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a YAML node")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<R::Out, E> {
        self.node(Node::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<R::Out, E> {
        self.node(Node::Int(v.into()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<R::Out, E> {
        self.node(Node::Int(v.into()))
    }

    fn visit_i128<E: de::Error>(self, v: i128) -> Result<R::Out, E> {
        if i64::try_from(v).is_ok() || u64::try_from(v).is_ok() {
            self.node(Node::Int(v))
        } else {
            self.node(Node::Big(v.to_string()))
        }
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> Result<R::Out, E> {
        match u64::try_from(v) {
            Ok(v) => self.node(Node::Int(v.into())),
            Err(_) => self.node(Node::Big(v.to_string())),
        }
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<R::Out, E> {
        self.node(Node::Float(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<R::Out, E> {
        self.node(Node::Str(v))
    }

    fn visit_unit<E: de::Error>(self) -> Result<R::Out, E> {
        self.node(Node::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<R::Out, E> {
        self.node(Node::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<R::Out, A::Error> {
        self.0.seq(seq)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<R::Out, A::Error> {
        self.0.map(map)
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<R::Out, A::Error> {
        // yaml_serde hands a tagged node (`!tag value`) over as an enum.
        let (tag, value): (String, _) = data.variant()?;
        value.newtype_variant::<IgnoredAny>()?;
        self.node(Node::Tagged(tag))
    }
}

/// A type read from the kinds of node it implements; by default a list or mapping is
/// skipped, then judged by `scalar`.
pub(super) trait Shape<'de>: Sized {
    fn scalar(node: Node<'_>) -> Result<Self, NodeError>;

    fn seq<A: SeqAccess<'de>>(seq: A) -> Result<Self, A::Error> {
        IgnoredAny.visit_seq(seq)?;
        Self::scalar(Node::List).map_err(fail)
    }

    fn map<A: MapAccess<'de>>(map: A) -> Result<Self, A::Error> {
        IgnoredAny.visit_map(map)?;
        Self::scalar(Node::Map).map_err(fail)
    }
}

impl<'de, T: Shape<'de>> Read<'de> for PhantomData<T> {
    type Out = T;

    fn scalar(self, node: Node<'_>) -> Result<T, Raised> {
        T::scalar(node).map_err(Raised::from)
    }

    fn seq<A: SeqAccess<'de>>(self, seq: A) -> Result<T, A::Error> {
        T::seq(seq)
    }

    fn map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        T::map(map)
    }
}

/// Implements `Deserialize` through [`Shape`].
macro_rules! strict {
    ($($t:ty),* $(,)?) => {$(
        impl<'de> serde::Deserialize<'de> for $t {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                d.deserialize_any($crate::config::read::Reader(std::marker::PhantomData::<$t>))
            }
        }
    )*};
}
pub(super) use strict;

/// A key that may be left out but, when written, holds a value: an explicit `null` goes to
/// `T`, which refuses it.
pub(super) struct Given<T>(pub Option<T>);

impl<T> Default for Given<T> {
    fn default() -> Self {
        Given(None)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Given<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        T::deserialize(d).map(|v| Given(Some(v)))
    }
}

/// A list (never a single value in its place).
pub(super) struct List<T>(pub Vec<T>);

impl<'de, T: Deserialize<'de>> Shape<'de> for List<T> {
    fn scalar(node: Node<'_>) -> Result<Self, NodeError> {
        Err(wrong("a list", &node))
    }

    fn seq<A: SeqAccess<'de>>(mut seq: A) -> Result<Self, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(List(items))
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for List<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(Reader(PhantomData::<Self>))
    }
}

/// The keys a block allows.
pub(super) trait Keys {
    const KEYS: &'static [&'static str];
}

/// A mapping decoded into `T`. Its keys are checked here, as each is read, so an unknown or
/// duplicate key is reported at its own line and column.
pub(super) struct Block<T>(pub T);

impl<'de, T: Deserialize<'de> + Keys> Shape<'de> for Block<T> {
    fn scalar(node: Node<'_>) -> Result<Self, NodeError> {
        Err(wrong("a mapping", &node))
    }

    fn map<A: MapAccess<'de>>(map: A) -> Result<Self, A::Error> {
        let keyed = Keyed {
            map,
            keys: T::KEYS,
            seen: Vec::new(),
        };
        T::deserialize(de::value::MapAccessDeserializer::new(keyed)).map(Block)
    }
}

impl<'de, T: Deserialize<'de> + Keys> Deserialize<'de> for Block<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(Reader(PhantomData::<Self>))
    }
}

/// A mapping whose keys must be among `keys`, each once.
struct Keyed<A> {
    map: A,
    keys: &'static [&'static str],
    seen: Vec<&'static str>,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Keyed<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        let Some(key) = self.map.next_key_seed(Reader(KeyCheck {
            keys: self.keys,
            seen: &self.seen,
        }))?
        else {
            return Ok(None);
        };
        self.seen.push(key);
        seed.deserialize(de::value::BorrowedStrDeserializer::new(key))
            .map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        self.map.next_value_seed(seed)
    }
}

/// A key as a key path names it.
fn label(node: &Node<'_>) -> String {
    match node {
        Node::Str(s) => key_label(s),
        Node::Null => "~".to_owned(),
        Node::Bool(b) => b.to_string(),
        Node::Int(n) => n.to_string(),
        Node::Big(n) => key_label(n),
        Node::Float(f) => f.to_string(),
        Node::List | Node::Map | Node::Tagged(_) => "<complex key>".to_owned(),
    }
}

/// Reads one key of a [`Keyed`] mapping: one of `keys`, not in `seen`.
struct KeyCheck<'a> {
    keys: &'static [&'static str],
    seen: &'a [&'static str],
}

impl<'de> Read<'de> for KeyCheck<'_> {
    type Out = &'static str;

    fn scalar(self, node: Node<'_>) -> Result<&'static str, Raised> {
        let label = label(&node);
        let known = match node {
            Node::Str(s) => self.keys.iter().find(|k| **k == s),
            _ => None,
        };
        match known {
            Some(k) if self.seen.contains(k) => {
                Err(about_key(&label, NodeError::DuplicateKey(label.clone())))
            }
            Some(k) => Ok(k),
            None => Err(about_key(
                &label,
                NodeError::UnknownKey {
                    allowed: self.keys.join(", "),
                },
            )),
        }
    }
}

/// Reads any key: `true` when it is `want`. `fire`: fail at `want` instead (a duplicate, or
/// the node [`locate`](super::locate::locate) looks for).
pub(super) struct Pick<'a> {
    pub want: &'a str,
    pub fire: bool,
}

impl<'de> Read<'de> for Pick<'_> {
    type Out = bool;

    fn scalar(self, node: Node<'_>) -> Result<bool, Raised> {
        match node {
            Node::Str(v) if v == self.want && self.fire => Err(about_key(
                self.want,
                NodeError::DuplicateKey(self.want.to_owned()),
            )),
            Node::Str(v) => Ok(v == self.want),
            _ => Ok(false),
        }
    }
}

//! Decoding and encoding of wire objects that keep what they do not model.
//!
//! Every wire object has a few fields we type (`model`, `messages`, …) and any number we do
//! not (`cache_control`, `context_management`, fields a provider adds next month). Decoding
//! moves the typed fields into struct fields and the rest into an ordered map, and remembers
//! the order the keys came in. Encoding walks that order again, so an object we did not
//! change goes out with the same keys in the same order as it came in: the provider's cache
//! keys on the rendered prompt, and tool inputs and schemas are rendered key by key.
//!
//! Encoding is a pure function of the decoded value, so the same logical request always
//! produces the same bytes. Fields set by code on an object that did not carry them come
//! after the original keys, typed fields first in declaration order, then new rest keys in
//! insertion order.
//!
//! A typed key sent as `null` reads as absent and is written back as `null` in its place;
//! if code sets the field, the value takes the place of the `null` (never a duplicate key).

use serde::ser::{SerializeMap, Serializer};
use serde_json::{Map, Value};

use crate::error::{JsonPath, Result, WireError, type_name};

/// Marks a key of the rest map in a [`KeyOrder`].
const REST: u8 = u8::MAX;

/// Flags a typed key that arrived as `null`.
const NULL: u8 = 0x40;

/// The order in which a decoded object's keys arrived: an index into the type's typed
/// fields (with [`NULL`] set when it arrived as `null`), or [`REST`] for the next key of its
/// rest map.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct KeyOrder(Vec<u8>);

impl KeyOrder {
    /// Records that typed field `index` (of `field_count`) is sent as `null` while absent,
    /// in its place: in canonical order for an object built in code, in the order it came
    /// for a decoded one.
    pub(crate) fn mark_null(&mut self, index: usize, field_count: usize) {
        let Ok(slot) = u8::try_from(index) else {
            return;
        };
        if self.0.is_empty() {
            self.0 = (0..field_count)
                .filter_map(|field| u8::try_from(field).ok())
                .collect();
        }
        match self
            .0
            .iter_mut()
            .find(|kept| **kept != REST && **kept & !NULL == slot)
        {
            Some(kept) => *kept |= NULL,
            None => self.0.push(slot | NULL),
        }
    }
}

/// Takes a client object's unmodelled fields and key order into a rendered object that
/// stands for it, keeping the rendered object's own fields (a value it sets wins, a key it
/// adds goes last): the rendered object goes up with every field the client sent, in its
/// order.
pub(crate) fn adopt_fields(
    rest: &mut Map<String, Value>,
    order: &mut KeyOrder,
    client_rest: &Map<String, Value>,
    client_order: &KeyOrder,
) {
    let mut merged = client_rest.clone();
    for (key, value) in std::mem::take(rest) {
        merged.insert(key, value);
    }
    *rest = merged;
    *order = client_order.clone();
}

/// A wire type made of typed fields plus a rest map.
pub(crate) trait WireObject {
    /// The typed keys, in canonical order. At most 63.
    const FIELDS: &'static [&'static str];

    fn key_order(&self) -> &KeyOrder;

    fn rest(&self) -> &Map<String, Value>;

    /// Writes typed field `index` if it is present.
    fn write_field<M: SerializeMap>(
        &self,
        index: usize,
        map: &mut M,
    ) -> std::result::Result<(), M::Error>;
}

/// One entry of a [`WireObject`] in encoding order.
enum Slot<'a> {
    /// A key of the rest map.
    Rest(&'a String, &'a Value),
    /// Typed field `index`; `null_fallback` when it arrived as `null` (written back as
    /// `null` if the field is now absent).
    Field { index: usize, null_fallback: bool },
}

/// The entries of `object` in its recorded key order, then typed fields it did not carry,
/// then new rest keys.
fn slots<T: WireObject>(object: &T) -> Vec<Slot<'_>> {
    let mut slots = Vec::with_capacity(object.key_order().0.len() + T::FIELDS.len());
    let mut written = 0u64;
    let mut rest = object.rest().iter();
    for &slot in &object.key_order().0 {
        if slot == REST {
            if let Some((key, value)) = rest.next() {
                slots.push(Slot::Rest(key, value));
            }
            continue;
        }
        let index = usize::from(slot & !NULL);
        if written & (1 << index) != 0 {
            continue;
        }
        written |= 1 << index;
        slots.push(Slot::Field {
            index,
            null_fallback: slot & NULL != 0,
        });
    }
    for index in 0..T::FIELDS.len() {
        if written & (1 << index) == 0 {
            slots.push(Slot::Field {
                index,
                null_fallback: false,
            });
        }
    }
    slots.extend(rest.map(|(key, value)| Slot::Rest(key, value)));
    slots
}

/// Serialises a [`WireObject`] in its recorded key order.
pub(crate) fn serialize_object<T: WireObject, S: Serializer>(
    object: &T,
    serializer: S,
) -> std::result::Result<S::Ok, S::Error> {
    let mut map = CountingMap {
        inner: serializer.serialize_map(None)?,
        entries: 0,
    };
    for slot in slots(object) {
        write_slot(object, slot, &mut map)?;
    }
    map.inner.end()
}

fn write_slot<T: WireObject, M: SerializeMap>(
    object: &T,
    slot: Slot<'_>,
    map: &mut CountingMap<M>,
) -> std::result::Result<(), M::Error> {
    match slot {
        Slot::Rest(key, value) => map.inner.serialize_entry(key, value),
        Slot::Field {
            index,
            null_fallback,
        } => {
            let before = map.entries;
            object.write_field(index, map)?;
            if map.entries == before && null_fallback {
                map.inner.serialize_entry(T::FIELDS[index], &Value::Null)?;
            }
            Ok(())
        }
    }
}

/// Encodes `object` exactly as [`encode_json`] would, except that typed field `raw_index`
/// is written as the given JSON bytes, which must be what serde_json writes for that field's
/// value. A caller that kept the encoded bytes of a large field (a conversation whose
/// messages mostly repeat) splices them in instead of encoding the field again. Also returns
/// where `raw` starts in the output (`None` if the object has no such field).
pub(crate) fn encode_with_raw_field<T: WireObject>(
    object: &T,
    raw_index: usize,
    raw: &[u8],
) -> (Vec<u8>, Option<usize>) {
    let mut out = Vec::with_capacity(raw.len() + 4096);
    out.push(b'{');
    let mut first = true;
    let mut entry = Vec::new();
    let mut raw_at = None;
    for slot in slots(object) {
        entry.clear();
        let mut raw_in_entry = None;
        match slot {
            Slot::Field { index, .. } if index == raw_index => {
                write_key(&mut entry, T::FIELDS[index]);
                raw_in_entry = Some(entry.len());
                entry.extend_from_slice(raw);
            }
            slot => write_entry_alone(object, slot, &mut entry),
        }
        if entry.is_empty() {
            continue;
        }
        if !first {
            out.push(b',');
        }
        first = false;
        if let Some(offset) = raw_in_entry {
            raw_at = Some(out.len() + offset);
        }
        out.extend_from_slice(&entry);
    }
    out.push(b'}');
    (out, raw_at)
}

fn write_key(out: &mut Vec<u8>, key: &str) {
    out.extend_from_slice(&encode_json(&key));
    out.push(b':');
}

/// Writes one slot's `"key":value` (nothing when the field is absent): the slot is
/// serialised as an object of its own and its braces left off.
fn write_entry_alone<T: WireObject>(object: &T, slot: Slot<'_>, out: &mut Vec<u8>) {
    let mut alone = Vec::new();
    let mut serializer = serde_json::Serializer::new(&mut alone);
    let written = serializer.serialize_map(None).and_then(|inner| {
        let mut map = CountingMap { inner, entries: 0 };
        write_slot(object, slot, &mut map)?;
        map.inner.end()
    });
    if written.is_ok()
        && let Some(inner) = alone.get(1..alone.len().saturating_sub(1))
    {
        out.extend_from_slice(inner);
    }
}

/// Counts the entries a typed field writes, so a field that wrote nothing can fall back to
/// the `null` it arrived as.
struct CountingMap<M> {
    inner: M,
    entries: usize,
}

impl<M: SerializeMap> SerializeMap for CountingMap<M> {
    type Ok = M::Ok;
    type Error = M::Error;

    fn serialize_key<K: ?Sized + serde::Serialize>(
        &mut self,
        key: &K,
    ) -> std::result::Result<(), M::Error> {
        self.entries += 1;
        self.inner.serialize_key(key)
    }

    fn serialize_value<V: ?Sized + serde::Serialize>(
        &mut self,
        value: &V,
    ) -> std::result::Result<(), M::Error> {
        self.inner.serialize_value(value)
    }

    fn end(self) -> std::result::Result<M::Ok, M::Error> {
        self.inner.end()
    }
}

/// Conversion from a JSON value at a known path, with errors that name the path.
pub(crate) trait FromJson: Sized {
    fn from_json(value: Value, path: &JsonPath<'_>) -> Result<Self>;
}

impl FromJson for Value {
    fn from_json(value: Value, _path: &JsonPath<'_>) -> Result<Self> {
        Ok(value)
    }
}

impl FromJson for String {
    fn from_json(value: Value, path: &JsonPath<'_>) -> Result<Self> {
        match value {
            Value::String(text) => Ok(text),
            other => Err(WireError::shape(
                path,
                format!("expected a string, found {}", type_name(&other)),
            )),
        }
    }
}

impl FromJson for bool {
    fn from_json(value: Value, path: &JsonPath<'_>) -> Result<Self> {
        match value {
            Value::Bool(flag) => Ok(flag),
            other => Err(WireError::shape(
                path,
                format!("expected true or false, found {}", type_name(&other)),
            )),
        }
    }
}

impl FromJson for u64 {
    fn from_json(value: Value, path: &JsonPath<'_>) -> Result<Self> {
        match value.as_u64() {
            Some(number) => Ok(number),
            None => Err(WireError::shape(
                path,
                format!(
                    "expected a non-negative integer, found {}",
                    describe(&value)
                ),
            )),
        }
    }
}

impl<T: FromJson> FromJson for Vec<T> {
    fn from_json(value: Value, path: &JsonPath<'_>) -> Result<Self> {
        match value {
            Value::Array(items) => items
                .into_iter()
                .enumerate()
                .map(|(index, item)| T::from_json(item, &path.index(index)))
                .collect(),
            other => Err(WireError::shape(
                path,
                format!("expected an array, found {}", type_name(&other)),
            )),
        }
    }
}

fn describe(value: &Value) -> String {
    match value {
        Value::Number(number) => number.to_string(),
        other => type_name(other).to_owned(),
    }
}

/// Takes a JSON object apart into typed fields and a rest map, recording key order.
pub(crate) struct ObjectReader<'p> {
    path: &'p JsonPath<'p>,
    fields: &'static [&'static str],
    slots: Vec<Option<Value>>,
    rest: Map<String, Value>,
    order: KeyOrder,
}

impl<'p> ObjectReader<'p> {
    /// Splits an object. A `null` under a typed key reads as absent and is remembered in the
    /// key order, so optional fields sent as `null` survive.
    pub(crate) fn new(
        object: Map<String, Value>,
        path: &'p JsonPath<'p>,
        fields: &'static [&'static str],
    ) -> Self {
        let mut slots = vec![None; fields.len()];
        let mut rest = Map::new();
        let mut order = Vec::with_capacity(object.len());
        for (key, value) in object {
            match fields.iter().position(|field| *field == key) {
                Some(index) if value.is_null() => order.push(index as u8 | NULL),
                Some(index) => {
                    order.push(index as u8);
                    slots[index] = Some(value);
                }
                None => {
                    order.push(REST);
                    rest.insert(key, value);
                }
            }
        }
        Self {
            path,
            fields,
            slots,
            rest,
            order: KeyOrder(order),
        }
    }

    /// Like [`ObjectReader::new`] for a value that must be an object.
    pub(crate) fn from_value(
        value: Value,
        path: &'p JsonPath<'p>,
        fields: &'static [&'static str],
    ) -> Result<Self> {
        match value {
            Value::Object(object) => Ok(Self::new(object, path, fields)),
            other => Err(WireError::shape(
                path,
                format!("expected an object, found {}", type_name(&other)),
            )),
        }
    }

    /// Takes typed field `index`, converting it.
    pub(crate) fn take<T: FromJson>(&mut self, index: usize) -> Result<Option<T>> {
        let Some(value) = self.slots.get_mut(index).and_then(Option::take) else {
            return Ok(None);
        };
        let field_path = self.path.key(self.fields[index]);
        T::from_json(value, &field_path).map(Some)
    }

    /// Takes a field the provider requires.
    pub(crate) fn require<T: FromJson>(&mut self, index: usize) -> Result<T> {
        match self.take(index)? {
            Some(value) => Ok(value),
            None if self.order.0.contains(&(index as u8 | NULL)) => Err(WireError::shape(
                &self.path.key(self.fields[index]),
                "required field is null",
            )),
            None => Err(WireError::shape(
                self.path,
                format!("missing required field `{}`", self.fields[index]),
            )),
        }
    }

    /// The leftovers: the rest map and the key order.
    pub(crate) fn finish(self) -> (Map<String, Value>, KeyOrder) {
        (self.rest, self.order)
    }
}

/// Writes `value` under `key` when present.
pub(crate) fn write_opt<M: SerializeMap, T: serde::Serialize>(
    map: &mut M,
    key: &str,
    value: Option<&T>,
) -> std::result::Result<(), M::Error> {
    match value {
        Some(value) => map.serialize_entry(key, value),
        None => Ok(()),
    }
}

/// Parses a body into a JSON value, enforcing the size limit before any parsing.
pub(crate) fn parse_body(bytes: &[u8], limit: usize) -> Result<Value> {
    if bytes.len() > limit {
        return Err(WireError::TooLarge {
            size: bytes.len(),
            limit,
        });
    }
    serde_json::from_slice(bytes).map_err(|error| WireError::from_json(&error))
}

/// Encodes a wire value to bytes.
#[expect(
    clippy::expect_used,
    reason = "our wire types serialise as maps with string keys into a Vec, which cannot fail"
)]
pub(crate) fn encode_json<T: serde::Serialize>(value: &T) -> Vec<u8> {
    serde_json::to_vec(value).expect("wire values always serialise")
}

/// Implements serde's traits for a wire type through [`WireObject`] and [`FromJson`], so
/// wire types also embed in other serde documents (scripts, fixtures) losslessly.
macro_rules! wire_serde {
    ($($ty:ty),+ $(,)?) => {$(
        impl serde::Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
                crate::object::serialize_object(self, serializer)
            }
        }

        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
                let value = <serde_json::Value as serde::Deserialize>::deserialize(deserializer)?;
                <$ty as crate::object::FromJson>::from_json(value, &crate::error::JsonPath::Root)
                    .map_err(<D::Error as serde::de::Error>::custom)
            }
        }
    )+};
}
pub(crate) use wire_serde;

//! The [`WireObject`](crate::object::WireObject) implementation every OpenAI wire struct
//! shares, written once as a macro so the field list, the typed keys and the writer cannot
//! drift apart.
//!
//! Each struct names its typed keys with their index into `FIELDS`; the index is what
//! [`ObjectReader`](crate::object::ObjectReader) records in the key order, so decoder and
//! encoder must agree on it. Content parts pass `type = "…"`: their `type` key sits at index
//! 0 and is written from the variant, never stored.

/// Implements `WireObject` for a struct with `rest: Map` and `order: KeyOrder` fields.
///
/// `N => "key": field` writes `field` always; `N => "key": field as optional` writes an
/// `Option` only when it is `Some`, so an absent field stays absent.
macro_rules! wire_object {
    ($ty:ty, type = $type_name:literal, [$($index:literal => $key:literal : $field:ident $(as $opt:ident)?),* $(,)?]) => {
        impl crate::object::WireObject for $ty {
            const FIELDS: &'static [&'static str] = &["type", $($key),*];

            fn key_order(&self) -> &crate::object::KeyOrder {
                &self.order
            }

            fn rest(&self) -> &serde_json::Map<String, serde_json::Value> {
                &self.rest
            }

            fn write_field<M: serde::ser::SerializeMap>(
                &self,
                index: usize,
                map: &mut M,
            ) -> std::result::Result<(), M::Error> {
                match index {
                    0 => map.serialize_entry("type", $type_name),
                    $($index => wire_object!(@write map, $key, self.$field $(, $opt)?),)*
                    _ => Ok(()),
                }
            }
        }
    };
    ($ty:ty, [$($index:literal => $key:literal : $field:ident $(as $opt:ident)?),* $(,)?]) => {
        impl crate::object::WireObject for $ty {
            const FIELDS: &'static [&'static str] = &[$($key),*];

            fn key_order(&self) -> &crate::object::KeyOrder {
                &self.order
            }

            fn rest(&self) -> &serde_json::Map<String, serde_json::Value> {
                &self.rest
            }

            fn write_field<M: serde::ser::SerializeMap>(
                &self,
                index: usize,
                map: &mut M,
            ) -> std::result::Result<(), M::Error> {
                match index {
                    $($index => wire_object!(@write map, $key, self.$field $(, $opt)?),)*
                    _ => Ok(()),
                }
            }
        }
    };
    (@write $map:ident, $key:literal, $value:expr) => {
        $map.serialize_entry($key, &$value)
    };
    (@write $map:ident, $key:literal, $value:expr, optional) => {
        crate::object::write_opt($map, $key, $value.as_ref())
    };
}
pub(super) use wire_object;

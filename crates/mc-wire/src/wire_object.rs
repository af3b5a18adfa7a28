//! The [`WireObject`](crate::object::WireObject) implementation every wire struct shares,
//! written once as a macro so the field list, the typed keys and the writer cannot drift
//! apart.
//!
//! Each struct names its typed keys with their index into `FIELDS`; the index is what
//! [`ObjectReader`](crate::object::ObjectReader) records in the key order, so decoder and
//! encoder must agree on it. Tagged objects pass `type = "…"` (a fixed tag) or
//! `type_from = f` (`f(&self) -> &str`, for one struct serving several tags): their `type`
//! key sits at index 0 and is written from the value, never stored.

/// Implements `WireObject` for a struct with `rest: Map` and `order: KeyOrder` fields.
///
/// `N => "key": field` writes `field` always; `N => "key": field as optional` writes an
/// `Option` only when it is `Some`, so an absent field stays absent.
macro_rules! wire_object {
    ($ty:ty, type = $type_name:literal, [$($fields:tt)*]) => {
        wire_object!($ty, type_from = |_: &$ty| $type_name, [$($fields)*]);
    };
    ($ty:ty, type_from = $type_name:expr, [$($index:literal => $key:literal : $field:ident $(as $opt:ident)?),* $(,)?]) => {
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
                    0 => map.serialize_entry("type", ($type_name)(self)),
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
pub(crate) use wire_object;

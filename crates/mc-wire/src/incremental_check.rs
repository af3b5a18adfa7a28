//! The fuzz targets' check of an incremental decoder against its full decoder, shared by
//! the three wires (feature `fuzzing`).

use crate::WireError;
use bytes::Bytes;

/// Decodes `bodies` in order with `decode` (the proxy's, through its remembered requests),
/// `remember`ing each one that decodes, and checks every result against `full`: no part
/// that `differs` names, or the same error. Returns the first disagreement.
pub fn check_sequence<D>(
    bodies: &[Bytes],
    decode: impl Fn(&Bytes) -> Result<D, WireError>,
    full: impl Fn(&Bytes) -> Result<D, WireError>,
    differs: impl Fn(&D, &D) -> Option<&'static str>,
    remember: impl Fn(D),
) -> Result<(), String> {
    for (index, body) in bodies.iter().enumerate() {
        match (decode(body), full(body)) {
            (Ok(decoded), Ok(full)) => {
                if let Some(what) = differs(&decoded, &full) {
                    return Err(format!(
                        "body {index}: the {what} differs from a full decode"
                    ));
                }
                remember(decoded);
            }
            (Err(error), Err(full)) if error == full => {}
            (got, full) => {
                return Err(format!(
                    "body {index}: incremental decode {:?} but full decode {:?}",
                    got.map(|_| ()),
                    full.map(|_| ())
                ));
            }
        }
    }
    Ok(())
}

/// The name of the first part that differs, of `parts` (a name and whether it differs).
pub fn first_difference<const N: usize>(parts: [(&'static str, bool); N]) -> Option<&'static str> {
    parts
        .into_iter()
        .find_map(|(name, differs)| differs.then_some(name))
}

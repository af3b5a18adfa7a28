//! Vectors at rest and in comparison: the byte layout stored beside each row, and similarity.
//!
//! Every provider returns unit-length vectors, so similarity is a plain dot product and
//! scores from different texts compare on one scale.

use crate::error::{EmbedError, Result};

/// Scales `vector` to unit length in place.
///
/// An all-zero vector (or one holding NaN) has no direction and is left as it is rather than
/// filled with NaN, so it simply scores zero against everything.
pub fn l2_normalise(vector: &mut [f32]) {
    let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm.is_finite() && norm > 0.0 {
        for x in vector.iter_mut() {
            *x /= norm;
        }
    }
}

/// Cosine similarity of two unit vectors (their dot product), in `[-1, 1]`.
///
/// `None` when the lengths differ: such vectors come from different models and have no
/// meaningful score, which a caller should treat as "re-embed", not as "unrelated".
pub fn cosine(a: &[f32], b: &[f32]) -> Option<f32> {
    (a.len() == b.len()).then(|| a.iter().zip(b).map(|(x, y)| x * y).sum())
}

/// The stored form of a vector: each value as 4 little-endian bytes, in order.
///
/// Little-endian is fixed (not native) so a database copied between machines reads the same.
pub fn to_blob(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Reads a vector written by [`to_blob`].
pub fn from_blob(blob: &[u8]) -> Result<Vec<f32>> {
    let chunks = blob.chunks_exact(4);
    if !chunks.remainder().is_empty() {
        return Err(EmbedError::BlobLength { len: blob.len() });
    }
    Ok(chunks
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blob_round_trips_bit_for_bit() {
        let vector = vec![0.0, -0.0, 1.5, -2.25e-8, f32::MAX, f32::MIN_POSITIVE];
        let blob = to_blob(&vector);
        assert_eq!(blob.len(), vector.len() * 4);
        assert_eq!(blob[8..12], 1.5f32.to_le_bytes());
        let back = from_blob(&blob).unwrap();
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&back), bits(&vector));
        assert_eq!(from_blob(&[]).unwrap(), Vec::<f32>::new());
    }

    #[test]
    fn blob_of_ragged_length_is_an_error() {
        assert!(matches!(
            from_blob(&[0, 0, 128, 63, 1]),
            Err(EmbedError::BlobLength { len: 5 })
        ));
    }

    #[test]
    fn normalise_gives_unit_length_and_leaves_zero_alone() {
        let mut v = vec![3.0, 4.0];
        l2_normalise(&mut v);
        assert_eq!(v, vec![0.6, 0.8]);
        let mut zero = vec![0.0; 3];
        l2_normalise(&mut zero);
        assert_eq!(zero, vec![0.0; 3]);
    }

    #[test]
    fn cosine_of_unit_vectors_is_their_dot_product() {
        assert_eq!(cosine(&[0.6, 0.8], &[0.6, 0.8]), Some(1.0));
        assert_eq!(cosine(&[1.0, 0.0], &[0.0, 1.0]), Some(0.0));
        assert_eq!(cosine(&[1.0, 0.0], &[-1.0, 0.0]), Some(-1.0));
        assert_eq!(cosine(&[1.0], &[1.0, 0.0]), None);
    }
}

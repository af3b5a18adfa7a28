use proptest::prelude::*;

use super::*;

/// A body of `bytes` cut at `cuts` (offsets, any order, duplicates allowed).
fn chunked(bytes: &[u8], cuts: &[usize]) -> ChunkedBody {
    let mut cuts: Vec<usize> = cuts.iter().map(|cut| cut % (bytes.len() + 1)).collect();
    cuts.push(0);
    cuts.push(bytes.len());
    cuts.sort_unstable();
    let mut body = ChunkedBody::new();
    for pair in cuts.windows(2) {
        body.push(Bytes::copy_from_slice(&bytes[pair[0]..pair[1]]));
    }
    body
}

proptest! {
    /// However a body is cut, it reads as its bytes: whole, byte by byte, by any range
    /// (sliced or in one piece), and bounded.
    #[test]
    fn a_chunked_body_reads_as_its_bytes(
        bytes in proptest::collection::vec(any::<u8>(), 0..300),
        cuts in proptest::collection::vec(any::<usize>(), 0..12),
        start in any::<usize>(),
        end in any::<usize>(),
    ) {
        let body = chunked(&bytes, &cuts);
        prop_assert_eq!(body.len(), bytes.len());
        prop_assert_eq!(&body.to_bytes()[..], &bytes[..]);
        prop_assert!(body.chunks().iter().all(|chunk| !chunk.is_empty()));
        for (at, byte) in bytes.iter().enumerate() {
            prop_assert_eq!(&body.get(at..at + 1).unwrap()[..], &[*byte][..]);
        }
        prop_assert!(body.get(bytes.len()..bytes.len() + 1).is_none());
        let (start, end) = (start % (bytes.len() + 1), end % (bytes.len() + 1));
        let range = start.min(end)..start.max(end);
        let slice = body.slice(range.clone()).unwrap();
        prop_assert_eq!(&slice.to_bytes()[..], &bytes[range.clone()]);
        prop_assert_eq!(&body.get(range.clone()).unwrap()[..], &bytes[range]);
        prop_assert_eq!(&body.clone().bounded().to_bytes()[..], &bytes[..]);
    }

    /// Two bodies cut anywhere compare as their bytes do: the shared start from any known
    /// point, and any two ranges.
    #[test]
    fn chunked_bodies_compare_as_their_bytes(
        bytes in proptest::collection::vec(0u8..3, 0..200),
        changes in proptest::collection::vec((any::<usize>(), 0u8..3), 0..3),
        extra in proptest::collection::vec(0u8..3, 0..20),
        cuts in proptest::collection::vec(any::<usize>(), 0..8),
        other_cuts in proptest::collection::vec(any::<usize>(), 0..8),
        from in any::<usize>(),
        ranges in (any::<usize>(), any::<usize>(), any::<usize>()),
    ) {
        let mut other = bytes.clone();
        for (at, byte) in changes {
            if !other.is_empty() {
                let at = at % other.len();
                other[at] = byte;
            }
        }
        other.extend_from_slice(&extra);
        let (a, b) = (chunked(&bytes, &cuts), chunked(&other, &other_cuts));
        let shared = bytes.iter().zip(&other).take_while(|(x, y)| x == y).count();
        let from = from % (shared + 1);
        prop_assert_eq!(a.common_prefix_len(&b, from), shared);
        prop_assert_eq!(b.common_prefix_len(&a, from), shared);

        let (start, other_start, len) = ranges;
        let len = len % (bytes.len().min(other.len()) + 1);
        let start = start % (bytes.len() - len + 1);
        let other_start = other_start % (other.len() - len + 1);
        let (range, other_range) = (start..start + len, other_start..other_start + len);
        prop_assert_eq!(
            a.range_eq(range.clone(), &b, other_range.clone()),
            bytes[range] == other[other_range]
        );
        prop_assert!(!a.range_eq(0..bytes.len() + 1, &a, 0..bytes.len() + 1));
    }
}

#[test]
fn a_body_is_the_same_as_its_clone_only() {
    let body = chunked(b"abcdef", &[2, 4]);
    assert!(body.is_same_as(&body.clone()));
    assert!(
        !body.is_same_as(&chunked(b"abcdef", &[2, 4])),
        "equal bytes elsewhere in memory"
    );
    assert!(!body.is_same_as(&body.slice(0..5).unwrap()));
}

#[test]
fn ranges_outside_the_body_are_none() {
    let body = chunked(b"[1,2,3]", &[2, 4]);
    assert!(body.slice(3..8).is_none());
    assert!(body.get(6..9).is_none());
    let reversed = Range { start: 5, end: 2 };
    assert!(body.slice(reversed.clone()).is_none());
    assert!(body.get(reversed).is_none());
    assert_eq!(body.get(7..7).unwrap().as_ref(), b"");
}

#[test]
fn a_range_inside_one_chunk_is_borrowed_and_slices_share_the_buffers() {
    let body = chunked(b"{\"messages\":[1,2,3]}", &[13, 17]);
    assert!(matches!(body.get(13..16), Some(Cow::Borrowed(b"1,2"))));
    assert!(matches!(body.get(10..15), Some(Cow::Owned(_))));
    let slice = body.slice(14..19).unwrap();
    assert_eq!(slice.chunks().len(), 2);
    assert_eq!(
        slice.chunks()[0].as_ptr(),
        body.chunks()[1][1..].as_ptr(),
        "a slice points into the body's own buffer"
    );
}

#[test]
fn too_many_chunks_are_joined_into_one() {
    let mut body = ChunkedBody::new();
    for byte in 0..=u8::try_from(MAX_CHUNKS).unwrap() {
        body.push(Bytes::copy_from_slice(&[byte]));
    }
    let bytes = body.to_bytes();
    let bounded = body.bounded();
    assert_eq!(bounded.chunks().len(), 1);
    assert_eq!(bounded.to_bytes(), bytes);
    let few = chunked(b"abcdef", &[2, 4]).bounded();
    assert_eq!(few.chunks().len(), 3, "within the bound: left as it is");
}

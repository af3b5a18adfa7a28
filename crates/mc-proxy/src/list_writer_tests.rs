use proptest::prelude::*;

use super::*;

/// What one step of writing a list does.
#[derive(Debug, Clone)]
enum Step {
    /// An item encoded now.
    Write(u32),
    /// Items `start..end` of the previous list, shared.
    Share(usize, usize),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        any::<u32>().prop_map(Step::Write),
        (0usize..8, 0usize..8).prop_map(|(a, b)| Step::Share(a.min(b), a.max(b))),
    ]
}

/// A previous body `{"x":[0,1,…,7]}` cut into chunks, and where each item lies in it.
fn previous(cuts: &[usize]) -> (ChunkedBody, Vec<Range<usize>>) {
    let before = b"{\"x\":".to_vec();
    let mut bytes = before.clone();
    bytes.push(b'[');
    let mut items = Vec::new();
    for item in 0..8 {
        if item > 0 {
            bytes.push(b',');
        }
        let start = bytes.len();
        bytes.extend_from_slice(format!("{}", item * 1000).as_bytes());
        items.push(start..bytes.len());
    }
    bytes.extend_from_slice(b"]}");
    let mut cuts: Vec<usize> = cuts.iter().map(|cut| cut % bytes.len()).collect();
    cuts.extend([0, bytes.len()]);
    cuts.sort_unstable();
    let mut body = ChunkedBody::new();
    for pair in cuts.windows(2) {
        body.push(Bytes::copy_from_slice(&bytes[pair[0]..pair[1]]));
    }
    (body, items)
}

proptest! {
    /// Whatever is written and shared, in any order, the body is the JSON list of those
    /// items between the bytes before and after it, and each returned range holds its
    /// items' bytes.
    #[test]
    fn a_written_list_is_the_items_in_order(
        steps in proptest::collection::vec(step(), 0..12),
        cuts in proptest::collection::vec(any::<usize>(), 0..6),
    ) {
        let (old, items) = previous(&cuts);
        let old_bytes = old.to_bytes();
        let mut list = ListWriter::open(ChunkedBody::from(b"{\"y\":".to_vec()));
        let mut expected: Vec<String> = Vec::new();
        let mut ranges = Vec::new();
        for step in &steps {
            match *step {
                Step::Write(value) => {
                    let start = list.write(&value);
                    ranges.push((start..list.len(), value.to_string()));
                    expected.push(value.to_string());
                }
                Step::Share(first, end) => {
                    let shared: Vec<String> =
                        (first..end).map(|item| (item * 1000).to_string()).collect();
                    let range = match (items.get(first), end.checked_sub(1).and_then(|last| items.get(last))) {
                        (Some(first), Some(last)) if end > 0 => first.start..last.end,
                        _ => 0..0,
                    };
                    let at = list.share(&old, range);
                    ranges.push((at, shared.join(",")));
                    expected.extend(shared);
                }
            }
        }
        let (body, _) = list.close(ChunkedBody::from(b"}".to_vec()));
        let text = String::from_utf8(body.to_bytes().to_vec()).unwrap();
        prop_assert_eq!(text, format!("{{\"y\":[{}]}}", expected.join(",")));
        for (range, items) in ranges {
            prop_assert_eq!(&body.get(range).unwrap()[..], items.as_bytes());
        }
        prop_assert_eq!(old.to_bytes(), old_bytes, "the previous body is untouched");
    }
}

#[test]
fn items_shared_one_after_the_other_are_one_slice_of_the_previous_body() {
    let (old, items) = previous(&[]);
    let mut list = ListWriter::open(ChunkedBody::from(b"{\"y\":".to_vec()));
    for item in &items[..6] {
        list.share(&old, item.clone());
    }
    list.write(&7u32);
    let (body, around) = list.close(ChunkedBody::from(b"}".to_vec()));
    assert_eq!(
        &body.to_bytes()[..],
        b"{\"y\":[0,1000,2000,3000,4000,5000,7]}"
    );
    // The head, `[`, the six shared items as one slice, `,7]`, the tail.
    assert_eq!(body.chunks().len(), 5, "{:?}", body.chunks());
    assert_eq!(&body.chunks()[2][..], b"0,1000,2000,3000,4000,5000");
    // The next body shares the bytes around the list with this one.
    let (before, after) = Around::reuse_or(Some((&body, around)), || unreachable!());
    assert_eq!(&before.to_bytes()[..], b"{\"y\":");
    assert_eq!(&after.to_bytes()[..], b"}");
}

#[test]
fn an_empty_list_is_brackets() {
    let list = ListWriter::open(ChunkedBody::new());
    let (body, _) = list.close(ChunkedBody::new());
    assert_eq!(&body.to_bytes()[..], b"[]");
}

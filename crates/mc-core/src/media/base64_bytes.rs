//! Reading the bytes of base64 data in place, without decoding all of it.
//!
//! An image's size sits in its first bytes (PNG, GIF, WebP) or a few segments in (JPEG), and
//! the base64 text of a screenshot is megabytes long. Base64 maps every 3 bytes to 4
//! characters, so byte `n` can be decoded from characters `4·(n/3)..4·(n/3)+4` alone: the
//! header parsers read only the bytes they need, and nothing the size of the payload is
//! allocated. Text with whitespace or characters outside both alphabets (standard and
//! URL-safe) reads as missing bytes, which the callers count at the provider's cap.

/// Random access to the bytes of some media, wherever they come from.
pub trait ByteSource {
    /// The byte at `offset`, or `None` past the end or where the data does not decode.
    fn byte_at(&self, offset: usize) -> Option<u8>;

    /// How many bytes there are (for base64, as the text's length implies).
    fn byte_len(&self) -> usize;
}

impl ByteSource for [u8] {
    fn byte_at(&self, offset: usize) -> Option<u8> {
        self.get(offset).copied()
    }

    fn byte_len(&self) -> usize {
        self.len()
    }
}

/// Base64 text read as the bytes it encodes.
#[derive(Debug, Clone, Copy)]
pub struct Base64Bytes<'a> {
    text: &'a [u8],
}

impl<'a> Base64Bytes<'a> {
    /// The bytes `text` encodes (standard or URL-safe alphabet, padded or not).
    pub fn new(text: &'a str) -> Self {
        Self {
            text: text.as_bytes(),
        }
    }

    /// Every byte, or `None` when any quad fails to decode. Used where every byte matters
    /// (counting a PDF's pages); the image parsers read in place instead.
    pub fn decode_all(&self) -> Option<Vec<u8>> {
        let mut out = Vec::with_capacity(self.byte_len());
        for quad in self.text.chunks(4) {
            let (bytes, count) = decode_quad(quad)?;
            out.extend_from_slice(&bytes[..count]);
        }
        Some(out)
    }
}

impl ByteSource for Base64Bytes<'_> {
    fn byte_at(&self, offset: usize) -> Option<u8> {
        let start = (offset / 3).checked_mul(4)?;
        let quad = self
            .text
            .get(start..self.text.len().min(start.checked_add(4)?))?;
        let (bytes, count) = decode_quad(quad)?;
        let at = offset % 3;
        (at < count).then(|| bytes[at])
    }

    fn byte_len(&self) -> usize {
        let padding = self.text.iter().rev().take_while(|&&c| c == b'=').count();
        let chars = self.text.len() - padding;
        chars / 4 * 3 + (chars % 4).saturating_sub(1)
    }
}

/// Up to four characters decoded to the bytes they hold and how many there are.
fn decode_quad(quad: &[u8]) -> Option<([u8; 3], usize)> {
    let mut sextets = [0_u8; 4];
    let mut count = 0;
    for &c in quad {
        if c == b'=' {
            break;
        }
        *sextets.get_mut(count)? = sextet(c)?;
        count += 1;
    }
    if count < 2 {
        return None;
    }
    let [a, b, c, d] = sextets;
    let bytes = [a << 2 | b >> 4, b << 4 | c >> 2, c << 6 | d];
    Some((bytes, count - 1))
}

fn sextet(c: u8) -> Option<u8> {
    match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' | b'-' => Some(62),
        b'/' | b'_' => Some(63),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_bytes_in_place_and_whole() {
        // "Magic ctx!" is 10 bytes: three full quads and one of two bytes.
        let text = "TWFnaWMgY3R4IQ==";
        let bytes = Base64Bytes::new(text);
        assert_eq!(bytes.byte_len(), 10);
        let read: Vec<u8> = (0..10).filter_map(|n| bytes.byte_at(n)).collect();
        assert_eq!(read, b"Magic ctx!");
        assert_eq!(bytes.byte_at(10), None);
        assert_eq!(bytes.decode_all().as_deref(), Some(&b"Magic ctx!"[..]));
        let unpadded = Base64Bytes::new("TWFnaWMgY3R4IQ");
        assert_eq!(unpadded.decode_all().as_deref(), Some(&b"Magic ctx!"[..]));
    }

    #[test]
    fn text_that_does_not_decode_reads_as_missing() {
        let bytes = Base64Bytes::new("TWFn aWMg");
        assert_eq!(bytes.byte_at(0), Some(b'M'));
        assert_eq!(bytes.byte_at(3), None);
        assert_eq!(bytes.decode_all(), None);
        assert_eq!(Base64Bytes::new("@@@@").byte_at(0), None);
        assert_eq!(Base64Bytes::new("").byte_len(), 0);
    }
}

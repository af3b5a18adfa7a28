//! An image's format and pixel size, read from its header.
//!
//! The providers bill an image by its pixels, not its bytes, and the pixel size is in the
//! first bytes of every format clients send (PNG, JPEG, GIF, WebP: the four both providers
//! accept). About a hundred lines of header reading keep the core free of an image crate;
//! nothing here decodes pixels. A header that is truncated, malformed or not one of the four
//! gives `None`, and the caller counts the image at the provider's cap.

use super::base64_bytes::ByteSource;

/// The formats whose headers are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ImageFormat {
    /// PNG (`IHDR` size).
    Png,
    /// JPEG (the first start-of-frame segment's size).
    Jpeg,
    /// GIF (the logical screen size).
    Gif,
    /// WebP (lossy `VP8 `, lossless `VP8L` or extended `VP8X` canvas).
    Webp,
}

impl ImageFormat {
    /// The short lowercase name used in labels (`png`, `jpeg`, `gif`, `webp`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Png => "png",
            Self::Jpeg => "jpeg",
            Self::Gif => "gif",
            Self::Webp => "webp",
        }
    }
}

/// An image's format and size in pixels as its header states them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ImageSize {
    /// The format the header's signature names.
    pub format: ImageFormat,
    /// Width in pixels, never zero.
    pub width: u32,
    /// Height in pixels, never zero.
    pub height: u32,
}

/// The format alone, from the signature (for a label when the size cannot be read).
pub fn sniff_format(bytes: &(impl ByteSource + ?Sized)) -> Option<ImageFormat> {
    let starts = |signature: &[u8]| {
        (0..signature.len()).all(|at| bytes.byte_at(at) == signature.get(at).copied())
    };
    if starts(b"\x89PNG\r\n\x1a\n") {
        Some(ImageFormat::Png)
    } else if starts(b"\xff\xd8") {
        Some(ImageFormat::Jpeg)
    } else if starts(b"GIF8") {
        Some(ImageFormat::Gif)
    } else if starts(b"RIFF") && (8..12).all(|at| bytes.byte_at(at) == b"WEBP".get(at - 8).copied())
    {
        Some(ImageFormat::Webp)
    } else {
        None
    }
}

/// The format and size of the image in `bytes`, when its header can be read.
pub fn image_size(bytes: &(impl ByteSource + ?Sized)) -> Option<ImageSize> {
    let format = sniff_format(bytes)?;
    let (width, height) = match format {
        ImageFormat::Png => (be32(bytes, 16)?, be32(bytes, 20)?),
        ImageFormat::Gif => (u32::from(le16(bytes, 6)?), u32::from(le16(bytes, 8)?)),
        ImageFormat::Jpeg => jpeg_size(bytes)?,
        ImageFormat::Webp => webp_size(bytes)?,
    };
    (width > 0 && height > 0).then_some(ImageSize {
        format,
        width,
        height,
    })
}

/// JPEG segments walked to the first start-of-frame; bounded, so a file of endless tiny
/// segments costs at most this many reads.
const MAX_JPEG_SEGMENTS: usize = 512;

fn jpeg_size(bytes: &(impl ByteSource + ?Sized)) -> Option<(u32, u32)> {
    let mut at = 2_usize;
    for _ in 0..MAX_JPEG_SEGMENTS {
        if bytes.byte_at(at)? != 0xff {
            return None;
        }
        let marker = bytes.byte_at(at + 1)?;
        match marker {
            // Fill bytes before a marker.
            0xff => at += 1,
            // Markers without a length: TEM, restart markers, start of image.
            0x01 | 0xd0..=0xd8 => at += 2,
            // Start of frame (every kind but DHT, JPG and DAC, which share the range).
            0xc0..=0xcf if !matches!(marker, 0xc4 | 0xc8 | 0xcc) => {
                let height = be16(bytes, at + 5)?;
                let width = be16(bytes, at + 7)?;
                return Some((u32::from(width), u32::from(height)));
            }
            _ => at = at.checked_add(2 + usize::from(be16(bytes, at + 2)?))?,
        }
    }
    None
}

fn webp_size(bytes: &(impl ByteSource + ?Sized)) -> Option<(u32, u32)> {
    let chunk: Vec<u8> = (12..16)
        .map(|at| bytes.byte_at(at))
        .collect::<Option<_>>()?;
    match chunk.as_slice() {
        b"VP8 " => Some((
            u32::from(le16(bytes, 26)? & 0x3fff),
            u32::from(le16(bytes, 28)? & 0x3fff),
        )),
        b"VP8L" => {
            let bits = le32(bytes, 21)?;
            Some(((bits & 0x3fff) + 1, ((bits >> 14) & 0x3fff) + 1))
        }
        b"VP8X" => Some((le24(bytes, 24)? + 1, le24(bytes, 27)? + 1)),
        _ => None,
    }
}

fn be16(bytes: &(impl ByteSource + ?Sized), at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([
        bytes.byte_at(at)?,
        bytes.byte_at(at + 1)?,
    ]))
}

fn le16(bytes: &(impl ByteSource + ?Sized), at: usize) -> Option<u16> {
    Some(u16::from_le_bytes([
        bytes.byte_at(at)?,
        bytes.byte_at(at + 1)?,
    ]))
}

fn le24(bytes: &(impl ByteSource + ?Sized), at: usize) -> Option<u32> {
    Some(u32::from_le_bytes([
        bytes.byte_at(at)?,
        bytes.byte_at(at + 1)?,
        bytes.byte_at(at + 2)?,
        0,
    ]))
}

fn be32(bytes: &(impl ByteSource + ?Sized), at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(four(bytes, at)?))
}

fn le32(bytes: &(impl ByteSource + ?Sized), at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(four(bytes, at)?))
}

fn four(bytes: &(impl ByteSource + ?Sized), at: usize) -> Option<[u8; 4]> {
    Some([
        bytes.byte_at(at)?,
        bytes.byte_at(at + 1)?,
        bytes.byte_at(at + 2)?,
        bytes.byte_at(at + 3)?,
    ])
}

#[cfg(test)]
pub(crate) mod tests;

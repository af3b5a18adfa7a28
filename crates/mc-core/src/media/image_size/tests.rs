use super::*;

/// A PNG signature and `IHDR` chunk stating `width`×`height`.
pub(crate) fn png(width: u32, height: u32) -> Vec<u8> {
    let mut bytes = b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR".to_vec();
    bytes.extend_from_slice(&width.to_be_bytes());
    bytes.extend_from_slice(&height.to_be_bytes());
    bytes.extend_from_slice(&[8, 6, 0, 0, 0, 0, 0, 0, 0]);
    bytes
}

/// A JPEG with an APP0 segment, fill bytes and a progressive start of frame.
pub(crate) fn jpeg(width: u16, height: u16) -> Vec<u8> {
    let mut bytes = vec![0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10];
    bytes.extend_from_slice(b"JFIF\0\x01\x01\0\0\x01\0\x01\0\0");
    bytes.extend_from_slice(&[0xff, 0xff, 0xc2, 0x00, 0x11, 0x08]);
    bytes.extend_from_slice(&height.to_be_bytes());
    bytes.extend_from_slice(&width.to_be_bytes());
    bytes.extend_from_slice(&[3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1]);
    bytes
}

fn webp(chunk: &[u8; 4], body: &[u8]) -> Vec<u8> {
    let mut bytes = b"RIFF\0\0\0\0WEBP".to_vec();
    bytes.extend_from_slice(chunk);
    bytes.extend_from_slice(&[0, 0, 0, 0]);
    bytes.extend_from_slice(body);
    bytes
}

#[test]
fn reads_the_size_of_each_format() {
    let size = |bytes: Vec<u8>| image_size(bytes.as_slice()).map(|s| (s.format, s.width, s.height));
    assert_eq!(size(png(1280, 720)), Some((ImageFormat::Png, 1280, 720)));
    assert_eq!(
        size(jpeg(4032, 3024)),
        Some((ImageFormat::Jpeg, 4032, 3024))
    );
    let mut gif = b"GIF89a".to_vec();
    gif.extend_from_slice(&[0x40, 0x01, 0xf0, 0x00]);
    assert_eq!(size(gif), Some((ImageFormat::Gif, 320, 240)));
    // Lossy: a frame tag, the start code, then 14-bit sizes with scale bits.
    let lossy = webp(
        b"VP8 ",
        &[0, 0, 0, 0x9d, 0x01, 0x2a, 0x80, 0x07, 0x38, 0xc4],
    );
    assert_eq!(size(lossy), Some((ImageFormat::Webp, 1920, 1080)));
    // Lossless: a signature byte, then width-1 and height-1 in 14 bits each.
    let (w, h) = (799_u32, 599_u32);
    let bits = w | (h << 14);
    let mut body = vec![0x2f];
    body.extend_from_slice(&bits.to_le_bytes());
    assert_eq!(
        size(webp(b"VP8L", &body)),
        Some((ImageFormat::Webp, 800, 600))
    );
    let extended = webp(b"VP8X", &[0, 0, 0, 0, 0xff, 0x0e, 0x00, 0x37, 0x08, 0x00]);
    assert_eq!(size(extended), Some((ImageFormat::Webp, 3840, 2104)));
}

#[test]
fn truncated_or_foreign_headers_give_none() {
    let full = png(1280, 720);
    for cut in 0..full.len().min(24) {
        assert_eq!(image_size(&full[..cut]), None, "cut at {cut}");
    }
    let full = jpeg(640, 480);
    for cut in 0..30 {
        assert_eq!(image_size(&full[..cut]), None, "cut at {cut}");
    }
    assert_eq!(image_size(&b"%PDF-1.7"[..]), None);
    assert_eq!(image_size(png(0, 720).as_slice()), None);
    assert_eq!(sniff_format(&png(0, 1)[..4]), None);
    assert_eq!(sniff_format(png(0, 1).as_slice()), Some(ImageFormat::Png));
}

#[test]
fn a_jpeg_of_endless_segments_stops() {
    let mut bytes = vec![0xff, 0xd8];
    for _ in 0..2_000 {
        bytes.extend_from_slice(&[0xff, 0xfe, 0x00, 0x02]);
    }
    assert_eq!(image_size(bytes.as_slice()), None);
}

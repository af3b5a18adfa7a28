//! How many pages a PDF has, counted cheaply from its bytes.
//!
//! Both providers bill a PDF per page (each page goes in as its text and a picture of it), so
//! the page count is what sizes a document. Every page object of a PDF is a dictionary with
//! `/Type /Page` (the page tree's own nodes say `/Pages`), so counting those names finds the
//! pages without parsing the file. PDFs that pack their objects into compressed object
//! streams hide those names; for them the count falls back to the size of the file.

/// The most pages counted: Anthropic's limit per request (a PDF claiming more is refused by
/// the provider anyway, and a lying file must not make our estimate refuse the call).
pub const MAX_PDF_PAGES: u64 = 100;

/// Bytes per page assumed when no page object can be seen (compressed object streams): an
/// ordinary text page with its fonts compresses to tens of kilobytes.
const BYTES_PER_PAGE: u64 = 50_000;

/// Whether `bytes` start like a PDF.
pub fn is_pdf(bytes: &[u8]) -> bool {
    bytes.starts_with(b"%PDF-")
}

/// The pages of the PDF in `bytes`, between 1 and [`MAX_PDF_PAGES`].
pub fn pdf_pages(bytes: &[u8]) -> u64 {
    let seen = page_objects(bytes);
    let pages = if seen > 0 {
        seen
    } else {
        (bytes.len() as u64).div_ceil(BYTES_PER_PAGE)
    };
    pages.clamp(1, MAX_PDF_PAGES)
}

/// Occurrences of the name `/Type` followed (after optional whitespace) by the name `/Page`
/// and a delimiter, so `/Pages` is not counted.
fn page_objects(bytes: &[u8]) -> u64 {
    let mut count = 0;
    let mut rest = bytes;
    while let Some(at) = find(rest, b"/Type") {
        rest = &rest[at + 5..];
        let value = rest.trim_ascii_start();
        if let Some(after) = value.strip_prefix(b"/Page")
            && after.first().is_none_or(|&c| !c.is_ascii_alphanumeric())
        {
            count += 1;
        }
    }
    count
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_page_objects_not_the_page_tree() {
        let pdf = b"%PDF-1.7\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n\
            2 0 obj << /Type /Pages /Kids [3 0 R 4 0 R 5 0 R] /Count 3 >> endobj\n\
            3 0 obj << /Type /Page /Parent 2 0 R >> endobj\n\
            4 0 obj <</Type/Page/Parent 2 0 R>> endobj\n\
            5 0 obj << /Type\n/Page >> endobj\n%%EOF";
        assert!(is_pdf(pdf));
        assert_eq!(pdf_pages(pdf), 3);
    }

    #[test]
    fn hidden_or_lying_page_counts_stay_in_bounds() {
        // Compressed object streams: no page object visible, sized by bytes.
        let mut packed = b"%PDF-1.7\n".to_vec();
        packed.resize(120_000, b'x');
        assert_eq!(pdf_pages(&packed), 3);
        assert_eq!(pdf_pages(b"%PDF-"), 1);
        let lying = b"/Type /Page ".repeat(10_000);
        assert_eq!(pdf_pages(&lying), MAX_PDF_PAGES);
        assert!(!is_pdf(b"\x89PNG"));
    }
}

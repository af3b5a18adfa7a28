//! Grouping digits for people: token counts run to millions, in excerpt markers, skeletons,
//! reports and `status`.

/// `1234567` as `1,234,567`.
pub fn thousands(value: u64) -> String {
    let digits = value.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_are_grouped() {
        let cases = [0, 7, 999, 1_000, 12_345, 168_000, 1_234_567, 84_686_226];
        let shown: Vec<String> = cases.into_iter().map(thousands).collect();
        assert_eq!(
            shown,
            [
                "0",
                "7",
                "999",
                "1,000",
                "12,345",
                "168,000",
                "1,234,567",
                "84,686,226"
            ]
        );
    }
}

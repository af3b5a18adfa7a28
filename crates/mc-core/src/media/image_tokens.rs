//! What each provider bills for an image of a given size.
//!
//! Both rules are the providers' documented ones (DESIGN §9 "media tokens"):
//! - Anthropic scales an image down, keeping its aspect, until its long edge is at most
//!   1,568 px and it holds at most about 1.15 megapixels (1,092 × 1,092 is the square
//!   limit its table gives), then bills width × height / 750 tokens: about 1,600 at most.
//! - OpenAI (Chat and Responses, the GPT-4o/4.1/5 tile rule) bills 85 tokens at `detail:
//!   low`; otherwise it fits the image in 2,048 × 2,048, scales its shortest side down to
//!   768, and bills 85 plus 170 per 512-px tile: 1,445 at most (768 × 2,048 is 8 tiles).
//!   `auto` is billed as `high` here: the provider picks per image, and counting high errs
//!   on the side that never sends over the window.

/// Which provider's rule counts an image.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ImageRule {
    /// Anthropic Messages: pixels / 750 after the downscale.
    Anthropic,
    /// OpenAI Chat and Responses: tiles, or the flat low-detail figure.
    OpenAi {
        /// The part asked for `detail: "low"`.
        low_detail: bool,
    },
}

/// Anthropic's long-edge limit, in pixels.
const ANTHROPIC_MAX_EDGE: u64 = 1_568;
/// Anthropic's pixel-count limit (1,092 × 1,092, its table's square at ~1.15 megapixels).
const ANTHROPIC_MAX_PIXELS: u64 = 1_092 * 1_092;
/// Pixels per token in Anthropic's rule.
const ANTHROPIC_PIXELS_PER_TOKEN: u64 = 750;
/// OpenAI's flat figure for a low-detail image, also its per-image base.
const OPENAI_BASE_TOKENS: u64 = 85;
/// OpenAI's figure per 512-px tile.
const OPENAI_TILE_TOKENS: u64 = 170;
/// The most tiles an image can take after OpenAI's scaling (768 × 2,048).
const OPENAI_MAX_TILES: u64 = 8;

impl ImageRule {
    /// Tokens of an image of `width` × `height` pixels; never more than [`Self::cap_tokens`],
    /// at least 1.
    pub fn tokens(self, width: u32, height: u32) -> u64 {
        let (width, height) = (u64::from(width.max(1)), u64::from(height.max(1)));
        let tokens = match self {
            Self::Anthropic => {
                let (w, h) = anthropic_scaled(width, height);
                (w * h).div_ceil(ANTHROPIC_PIXELS_PER_TOKEN)
            }
            Self::OpenAi { low_detail: true } => OPENAI_BASE_TOKENS,
            Self::OpenAi { low_detail: false } => {
                let (w, h) = openai_scaled(width, height);
                OPENAI_BASE_TOKENS + OPENAI_TILE_TOKENS * w.div_ceil(512) * h.div_ceil(512)
            }
        };
        tokens.clamp(1, self.cap_tokens())
    }

    /// The most an image can cost under this rule: what an image of unknown size (a URL, a
    /// file id, a header that cannot be read or that lies) is counted at.
    pub fn cap_tokens(self) -> u64 {
        match self {
            Self::Anthropic => 1_600,
            Self::OpenAi { low_detail: true } => OPENAI_BASE_TOKENS,
            Self::OpenAi { low_detail: false } => {
                OPENAI_BASE_TOKENS + OPENAI_TILE_TOKENS * OPENAI_MAX_TILES
            }
        }
    }
}

/// `width` × `height` scaled by `numerator / denominator` (never up), each side at least 1.
fn scaled(width: u64, height: u64, numerator: u64, denominator: u64) -> (u64, u64) {
    if numerator >= denominator {
        return (width, height);
    }
    (
        (width * numerator / denominator).max(1),
        (height * numerator / denominator).max(1),
    )
}

fn anthropic_scaled(width: u64, height: u64) -> (u64, u64) {
    let long = width.max(height);
    let (width, height) = scaled(width, height, ANTHROPIC_MAX_EDGE, long);
    let pixels = width * height;
    if pixels <= ANTHROPIC_MAX_PIXELS {
        return (width, height);
    }
    // Scale both sides by sqrt(max / pixels), in integers: the side ratio that brings the
    // area under the limit, computed on the long edge.
    let long = width.max(height);
    let target_long = (long * long * ANTHROPIC_MAX_PIXELS / pixels).isqrt();
    scaled(width, height, target_long, long)
}

fn openai_scaled(width: u64, height: u64) -> (u64, u64) {
    let (width, height) = scaled(width, height, 2_048, width.max(height));
    scaled(width, height, 768, width.min(height))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anthropic_bills_pixels_over_750_after_its_downscale() {
        let rule = ImageRule::Anthropic;
        // Under both limits: the plain rule.
        assert_eq!(rule.tokens(1_000, 1_000), 1_334);
        assert_eq!(rule.tokens(200, 200), 54);
        // Anthropic's own table: 1092×1092 and 1568×784 are about 1,590 and 1,639 before
        // the area limit; both land at or under the cap.
        assert_eq!(rule.tokens(1_092, 1_092), 1_590);
        // A retina screenshot (2880×1800) scales to about 1,380×863: near the cap.
        let retina = rule.tokens(2_880, 1_800);
        assert!((1_550..=1_600).contains(&retina), "{retina}");
        // Lies and extremes stay within [1, cap].
        assert_eq!(rule.tokens(100_000, 100_000), 1_590);
        assert!(rule.tokens(u32::MAX, 1) >= 1);
        assert!(rule.tokens(u32::MAX, u32::MAX) <= 1_600);
        assert_eq!(rule.tokens(1, 1), 1);
    }

    #[test]
    fn openai_bills_tiles_or_the_low_detail_figure() {
        let high = ImageRule::OpenAi { low_detail: false };
        // OpenAI's worked examples: 1024×1024 → 768×768, 4 tiles, 765 tokens; 2048×4096 →
        // 1024×2048 → 768×1536, 6 tiles, 1,105 tokens.
        assert_eq!(high.tokens(1_024, 1_024), 765);
        assert_eq!(high.tokens(2_048, 4_096), 1_105);
        assert_eq!(high.tokens(512, 512), 255);
        assert_eq!(high.tokens(100_000, 100_000), 765);
        assert_eq!(high.cap_tokens(), 1_445);
        assert_eq!(high.tokens(768, 2_048), 1_445);
        let low = ImageRule::OpenAi { low_detail: true };
        assert_eq!(low.tokens(4_096, 4_096), 85);
    }
}

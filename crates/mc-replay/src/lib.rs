//! Replays recorded agent sessions through context strategies on the simulated provider, and
//! reports what each strategy would have cost (DESIGN §8).
//!
//! For every strategy and every recording, a fresh simulated provider prices each step's
//! calls on the simulated clock; the report sums them per strategy: tokens by cache class,
//! cost at list prices (and its prompt side alone, the part a strategy controls), the cost of
//! labelled background calls, cache busts by cause, context sizes, requests over the window
//! (each of which ends its recording for that strategy, as it would a real client's session),
//! the engine's failures, how many of the user's own messages the last request still held
//! verbatim, counts only the strategy knows, and the time the strategy itself took. Every
//! claim Magic Context makes about money is a figure from here, side by side with the
//! baselines of the same run.
//!
//! It does no I/O beyond what it is handed, except the `magic` strategy's SQLite store in a
//! temporary directory: recordings come in loaded, the report and the SVG go out as values
//! for the binary to print or write. The one clock it reads is
//! `std::time::Instant`, to time the strategies; all cache behaviour runs on recorded times.
//!
//! ```no_run
//! use std::path::Path;
//! use mc_replay::{ReplayOptions, replay};
//!
//! let recordings = mc_sim::recording::load(Path::new("shared/data/swe-trajectories"), None)?;
//! let options = ReplayOptions { window_tokens: Some(50_000), ..ReplayOptions::default() };
//! let report = replay(&recordings, &options)?;
//! print!("{}", report.render_table());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod busts;
mod embedded_probe;
mod error;
mod estimate;
mod harness;
mod magic;
mod magic_historian;
mod memo;
mod plot;
mod progress;
pub mod recall_dropped;
mod references_kept;
mod report;
mod stand_in;
mod totals;
mod user_words_kept;

pub use busts::{BustTracker, CacheOutcome, PREFIX_CHANGED, TTL_EXPIRED};
pub use embedded_probe::{EmbeddedProbe, ProbeModelError};
pub use error::ReplayError;
pub use harness::{RecordingRun, Replay, ReplayOptions, StepPoint, StrategyRun, replay};
pub use magic::Magic;
pub use mc_core::thousands;
pub use memo::MemoCounter;
pub use plot::{PlotSeries, render_svg};
pub use recall_dropped::{
    HybridFigures, QueryFigures, RecallDropped, RecordingRecall, SemanticProbe, SharedSemanticProbe,
};
pub use references_kept::StepReferences;
pub use stand_in::StandIn;
pub use totals::{CallUsage, LabelTotals, StrategyTotals};
pub use user_words_kept::{LOST_PREVIEW_CHARS, LostWords, UserMessages};

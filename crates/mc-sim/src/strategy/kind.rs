//! The strategies by name, as the command line and reports spell them.

use std::fmt;
use std::str::FromStr;

use super::{Autocompact, ClearTools, ClearToolsBatched, Passthrough, Strategy, Window};

/// Which baseline strategy to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StrategyKind {
    /// No management: the client's request as it is.
    Passthrough,
    /// Claude Code's compaction near the window.
    Autocompact,
    /// The newest messages that fit.
    Window,
    /// Anthropic's server-side tool-result clearing, default configuration.
    ClearTools,
    /// The same clearing with `clear_at_least` and `clear_tool_inputs`, as advised for use
    /// with prompt caching.
    ClearToolsBatched,
    /// The transform engine itself; it needs the store, so `mc-replay` builds it.
    Magic,
}

impl StrategyKind {
    /// Every baseline, in report order.
    pub const ALL: [Self; 6] = [
        Self::Passthrough,
        Self::Autocompact,
        Self::Window,
        Self::ClearTools,
        Self::ClearToolsBatched,
        Self::Magic,
    ];

    /// The baselines, which this crate builds on its own.
    pub const BASELINES: [Self; 5] = [
        Self::Passthrough,
        Self::Autocompact,
        Self::Window,
        Self::ClearTools,
        Self::ClearToolsBatched,
    ];

    /// The name used on the command line and as the report key.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Passthrough => "passthrough",
            Self::Autocompact => "autocompact",
            Self::Window => "window",
            Self::ClearTools => "clear-tools",
            Self::ClearToolsBatched => "clear-tools-batched",
            Self::Magic => "magic",
        }
    }

    /// A fresh strategy of this kind, with no state; `None` for [`StrategyKind::Magic`], which
    /// `mc-replay` builds over a store. The window and output limits come with each step in
    /// the [`super::StrategyContext`], so one kind serves any `--window`.
    pub fn build(self) -> Option<Box<dyn Strategy>> {
        match self {
            Self::Passthrough => Some(Box::new(Passthrough)),
            Self::Autocompact => Some(Box::new(Autocompact::new())),
            Self::Window => Some(Box::new(Window::new())),
            Self::ClearTools => Some(Box::new(ClearTools::new())),
            Self::ClearToolsBatched => Some(Box::new(ClearToolsBatched::new())),
            Self::Magic => None,
        }
    }

    /// Parses a comma-separated list (`"window,passthrough"`), keeping its order and dropping
    /// repeats.
    pub fn parse_list(list: &str) -> Result<Vec<Self>, UnknownStrategy> {
        let mut kinds = Vec::new();
        for name in list
            .split(',')
            .map(str::trim)
            .filter(|name| !name.is_empty())
        {
            let kind = name.parse()?;
            if !kinds.contains(&kind) {
                kinds.push(kind);
            }
        }
        if kinds.is_empty() {
            return Err(UnknownStrategy {
                name: list.to_owned(),
            });
        }
        Ok(kinds)
    }
}

impl fmt::Display for StrategyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A strategy name that is not one of [`StrategyKind::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown strategy `{name}`; valid strategies: {}", valid_names())]
pub struct UnknownStrategy {
    /// What was asked for.
    pub name: String,
}

/// Every strategy's name, comma-separated, in [`StrategyKind::ALL`] order.
fn valid_names() -> String {
    StrategyKind::ALL.map(StrategyKind::as_str).join(", ")
}

impl FromStr for StrategyKind {
    type Err = UnknownStrategy;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|kind| kind.as_str() == name)
            .ok_or_else(|| UnknownStrategy {
                name: name.to_owned(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for kind in StrategyKind::ALL {
            assert_eq!(kind.to_string().parse::<StrategyKind>(), Ok(kind));
            if let Some(strategy) = kind.build() {
                assert_eq!(strategy.name(), kind.as_str());
            }
        }
    }

    #[test]
    fn lists_parse_in_order_without_repeats() {
        assert_eq!(
            StrategyKind::parse_list("window, passthrough,window"),
            Ok(vec![StrategyKind::Window, StrategyKind::Passthrough])
        );
    }

    #[test]
    fn unknown_names_list_the_valid_ones() {
        let error = StrategyKind::parse_list("passthrough,wizard").unwrap_err();
        assert_eq!(
            error.to_string(),
            "unknown strategy `wizard`; valid strategies: passthrough, autocompact, window, clear-tools, clear-tools-batched, magic"
        );
        assert_eq!(
            StrategyKind::parse_list("magic,clear-tools-batched"),
            Ok(vec![StrategyKind::Magic, StrategyKind::ClearToolsBatched])
        );
        assert!(StrategyKind::parse_list(" , ").is_err());
    }
}

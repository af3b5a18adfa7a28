//! Integration tests of mc-historian over a real SQLite store in a tempdir.
//!
//! Every module is `cfg(test)` so that clippy treats the helpers in them as test code.

#[cfg(test)]
mod long_episode;
#[cfg(test)]
mod on_demand;
#[cfg(test)]
mod runs;
#[cfg(test)]
mod team_store;

//! Integration tests of mc-store against real SQLite files in temporary directories.
//!
//! Every module is `cfg(test)` (always true here) so that clippy treats the helpers in them as
//! test code: `allow-unwrap-in-tests` otherwise covers only `#[test]` functions.

#[cfg(test)]
mod bad_files;
#[cfg(test)]
mod concurrency;
#[cfg(test)]
mod fork;
#[cfg(test)]
mod hot_path;
#[cfg(test)]
mod ledger;
#[cfg(test)]
mod memories;
#[cfg(test)]
mod memory_use;
#[cfg(test)]
mod messages;
#[cfg(test)]
mod nothing_lost;
#[cfg(test)]
mod open;
#[cfg(test)]
mod permissions;
#[cfg(test)]
mod provisional;
#[cfg(test)]
mod search;
#[cfg(test)]
mod sessions;
#[cfg(test)]
mod smart_notes;
#[cfg(test)]
mod staging;
#[cfg(test)]
mod support;
#[cfg(test)]
mod team_cache;
#[cfg(test)]
mod team_notes;
#[cfg(test)]
mod team_use;

//! Which files a project's agent re-reads most, from the reads its sessions made: the pure
//! part of the dreamer's `pin_key_files` task.
//!
//! Every read counts, weighted by its age: a read loses half its weight every
//! [`HALF_LIFE_MS`] (a week), so a file the agent reads every day outranks one it read
//! often a month ago, and reads older than [`LOOKBACK_MS`] are not counted at all. Only a
//! file read at least `min_reads` times within the lookback is a key file: one read is the
//! agent finding its way, not a file it keeps coming back to. Ties go to the file read more
//! often, then to the path, so the ranking is the same on every run over the same reads.

use std::collections::BTreeMap;

/// A read loses half its weight every week: a working week of reads outweighs a busier
/// week long past.
pub const HALF_LIFE_MS: i64 = 7 * 24 * 60 * 60 * 1000;

/// Reads older than thirty days are not counted: the project has moved on since.
pub const LOOKBACK_MS: i64 = 30 * 24 * 60 * 60 * 1000;

/// One file read by the agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRead {
    /// The file, relative to the project's root ([`project_relative`]).
    pub path: String,
    /// When the read was asked for, unix milliseconds.
    pub at_ms: i64,
}

/// A file and how much it was read.
#[derive(Debug, Clone, PartialEq)]
pub struct RankedFile {
    /// The file, relative to the project's root.
    pub path: String,
    /// Reads within the lookback.
    pub reads: u32,
    /// The reads' weights summed (each 1 when fresh, halving per [`HALF_LIFE_MS`]).
    pub weight: f64,
}

/// The files of `reads` read at least `min_reads` times in the [`LOOKBACK_MS`] before
/// `now_ms`, most weighted first.
pub fn rank_reads(reads: &[FileRead], now_ms: i64, min_reads: u32) -> Vec<RankedFile> {
    let since_ms = now_ms.saturating_sub(LOOKBACK_MS);
    let mut by_path: BTreeMap<&str, (u32, f64)> = BTreeMap::new();
    for read in reads.iter().filter(|read| read.at_ms >= since_ms) {
        let age_ms = now_ms.saturating_sub(read.at_ms).max(0);
        let weight = 0.5_f64.powf(age_ms as f64 / HALF_LIFE_MS as f64);
        let entry = by_path.entry(read.path.as_str()).or_default();
        entry.0 += 1;
        entry.1 += weight;
    }
    let mut ranked: Vec<RankedFile> = by_path
        .into_iter()
        .filter(|(_, (reads, _))| *reads >= min_reads.max(1))
        .map(|(path, (reads, weight))| RankedFile {
            path: path.to_owned(),
            reads,
            weight,
        })
        .collect();
    ranked.sort_by(|a, b| {
        b.weight
            .total_cmp(&a.weight)
            .then(b.reads.cmp(&a.reads))
            .then(a.path.cmp(&b.path))
    });
    ranked
}

/// `path` as a path inside the project rooted at `root` (both as the agent wrote them, with
/// `/` separators): an absolute path under the root loses the root, a relative one its
/// leading `./`. `None` for a path outside the root, one that climbs with `..`, or one
/// with nothing left; whether the file exists is for the caller to check.
pub fn project_relative(path: &str, root: &str) -> Option<String> {
    let relative = if path.starts_with('/') {
        let root = root.trim_end_matches('/');
        path.strip_prefix(root)?.strip_prefix('/')?
    } else {
        path
    };
    let parts: Vec<&str> = relative
        .split('/')
        .filter(|part| !part.is_empty() && *part != ".")
        .collect();
    if parts.is_empty() || parts.contains(&"..") {
        return None;
    }
    Some(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW_MS: i64 = 1_796_504_400_000;
    const DAY_MS: i64 = 24 * 60 * 60 * 1000;

    fn read(path: &str, days_ago: i64) -> FileRead {
        FileRead {
            path: path.into(),
            at_ms: NOW_MS - days_ago * DAY_MS,
        }
    }

    #[test]
    fn recent_reads_outweigh_older_ones_and_rare_or_stale_files_are_left_out() {
        let reads = [
            read("src/old.rs", 20),
            read("src/old.rs", 20),
            read("src/old.rs", 21),
            read("src/old.rs", 22),
            read("src/hot.rs", 0),
            read("src/hot.rs", 1),
            read("src/hot.rs", 2),
            read("src/once.rs", 0),
            read("src/gone_by.rs", 31),
            read("src/gone_by.rs", 40),
            read("src/gone_by.rs", 45),
        ];
        let ranked = rank_reads(&reads, NOW_MS, 3);
        let order: Vec<(&str, u32)> = ranked
            .iter()
            .map(|file| (file.path.as_str(), file.reads))
            .collect();
        assert_eq!(order, [("src/hot.rs", 3), ("src/old.rs", 4)]);
        assert!(
            (ranked[0].weight - (1.0 + 0.5_f64.powf(1.0 / 7.0) + 0.5_f64.powf(2.0 / 7.0))).abs()
                < 1e-9
        );
    }

    #[test]
    fn equal_weights_go_to_the_path_in_order() {
        let reads = [read("b.rs", 0), read("a.rs", 0)];
        let ranked = rank_reads(&reads, NOW_MS, 1);
        let order: Vec<&str> = ranked.iter().map(|file| file.path.as_str()).collect();
        assert_eq!(order, ["a.rs", "b.rs"]);
    }

    #[test]
    fn paths_are_taken_relative_to_the_root_and_escapes_refused() {
        let root = "/home/dev/shop";
        let cases = [
            ("/home/dev/shop/src/a.rs", Some("src/a.rs")),
            ("/home/dev/shop//src/./a.rs", Some("src/a.rs")),
            ("./src/a.rs", Some("src/a.rs")),
            ("src/a.rs", Some("src/a.rs")),
            ("/home/dev/shopping/a.rs", None),
            ("/etc/passwd", None),
            ("../other/a.rs", None),
            ("src/../../a.rs", None),
            ("/home/dev/shop", None),
            (".", None),
        ];
        for (path, expected) in cases {
            assert_eq!(project_relative(path, root).as_deref(), expected, "{path}");
        }
        assert_eq!(
            project_relative("/home/dev/shop/a.rs", "/home/dev/shop/").as_deref(),
            Some("a.rs")
        );
    }
}

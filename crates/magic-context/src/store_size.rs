//! The store's size on disk, as `status` and `prune` show it.

use std::path::Path;

use mc_store::{StoreSize, store_size};
use serde_json::{Value, json};

/// `bytes` in the largest binary unit that keeps it at or above 1 ("12.3 MiB").
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    // Display only: a float's rounding is what a reader wants here.
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// One line: the store's path and size, the log's share named when it has one.
pub fn size_line(db_path: &Path) -> String {
    let size = store_size(db_path);
    format!("store: {} ({})\n", db_path.display(), size_words(size))
}

fn size_words(size: StoreSize) -> String {
    if size.wal_bytes == 0 {
        human_bytes(size.db_bytes)
    } else {
        format!(
            "{}: file {} + write-ahead log {}",
            human_bytes(size.total_bytes()),
            human_bytes(size.db_bytes),
            human_bytes(size.wal_bytes)
        )
    }
}

/// The store's path and size as `--json` shows them.
pub fn size_json(db_path: &Path) -> Value {
    let size = store_size(db_path);
    json!({
        "path": db_path.display().to_string(),
        "db_bytes": size.db_bytes,
        "wal_bytes": size.wal_bytes,
        "total_bytes": size.total_bytes(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_in_binary_units() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(5 * 1024 * 1024), "5.0 MiB");
    }
}

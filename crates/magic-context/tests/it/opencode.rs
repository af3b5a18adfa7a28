//! The real OpenCode CLI, pinned, installed from the npm registry on first use (see
//! [`NpmClient`]); `MC_OPENCODE_BIN` may name an installed `opencode` instead.

use std::path::PathBuf;
use std::sync::OnceLock;

use crate::support::npm_client::NpmClient;

/// The release whose wire `../shared/CLIENTS.md` records.
const OPENCODE: NpmClient = NpmClient {
    package: "opencode-ai",
    version: "1.18.33",
    bin: "opencode",
    env_var: "MC_OPENCODE_BIN",
};

/// Path to a runnable `opencode`, installing it on first use.
pub fn binary() -> PathBuf {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| OPENCODE.locate_or_install()).clone()
}

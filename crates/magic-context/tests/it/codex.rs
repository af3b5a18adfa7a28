//! The real Codex CLI, pinned, installed from the npm registry on first use (see
//! [`NpmClient`]); `MC_CODEX_BIN` may name an installed `codex` instead.

use std::path::PathBuf;
use std::sync::OnceLock;

use crate::support::npm_client::NpmClient;

/// The release whose wire `../shared/CLIENTS.md` records.
const CODEX: NpmClient = NpmClient {
    package: "@openai/codex",
    version: "0.171.0",
    bin: "codex",
    env_var: "MC_CODEX_BIN",
};

/// Path to a runnable `codex`, installing it on first use.
pub fn binary() -> PathBuf {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| CODEX.locate_or_install()).clone()
}

//! Magic Context configuration: JSONC files, layering, per-key validation and the schema.
//!
//! Two files are layered over the DESIGN §9 defaults, key by key: the user file
//! (`$MAGIC_CONTEXT_CONFIG`, else `$XDG_CONFIG_HOME/magic-context/magic-context.jsonc`, else
//! `~/.config/magic-context/magic-context.jsonc`) and, winning over it, the project file
//! (`<project root>/.magic-context.jsonc`). Files may hold comments and trailing commas.
//!
//! Loading never fails as a whole. A missing file is normal; a broken file is skipped with a
//! [`Diagnostic`]; a bad key (wrong type, unknown name, out of range) is reported with its
//! file, key and reason and falls back to the layer below, while the rest of the file still
//! applies. A proxy must keep running on a typo, and the user must still hear about it.
//!
//! This crate reads files and the environment; it does no logging (the caller decides how to
//! show diagnostics) and holds no engine logic: the checked types live in `mc_core::config`.
//!
//! ```
//! use mc_config::{ConfigSources, Source, load};
//!
//! let dir = tempfile::tempdir()?;
//! std::fs::write(
//!     dir.path().join(".magic-context.jsonc"),
//!     r#"{ "pass": { "execute_threshold_percent": 70, "refusal_percent": 50, }, // too low
//!     }"#,
//! )?;
//! let sources = ConfigSources { project: Some(dir.path().join(".magic-context.jsonc")), ..Default::default() };
//! let loaded = load(&sources);
//! assert_eq!(loaded.config.pass.execute_threshold_percent.get(), 70);
//! assert_eq!(loaded.config.pass.refusal_percent.get(), 95); // the default, with a diagnostic
//! assert_eq!(loaded.diagnostics[0].key.as_deref(), Some("pass.refusal_percent"));
//! assert!(matches!(loaded.provenance["pass.execute_threshold_percent"], Source::Project(_)));
//! # Ok::<(), std::io::Error>(())
//! ```

mod diagnostic;
mod error;
mod jsonc;
mod key_path;
mod load;
mod raw;
mod resolve;
mod schedule;
mod schema;
mod screen;
mod serde_reason;
mod sources;
mod user_only;

pub use diagnostic::{Diagnostic, Source};
pub use error::FileError;
pub use load::{LoadedConfig, load, load_layers, load_with_text};
pub use raw::{
    RawCache, RawCacheTtl, RawConfig, RawDreamer, RawDreamerSchedules, RawEmbeddings,
    RawExecuteThreshold, RawExpand, RawHistorian, RawHistory, RawM1Refold, RawMemory, RawPass,
    RawProxy, RawReduction, RawWorkspace,
};
pub use schema::json_schema;
pub use sources::{ConfigSources, find_project_root};

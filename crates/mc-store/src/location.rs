//! Where the store lives, and creating it there with private permissions.
//!
//! The store holds whole conversations, which carry source code and sometimes secrets, so it
//! is created 0600 inside a 0700 directory (DESIGN §7). The file is created with that mode
//! *before* SQLite opens it: SQLite gives its `-wal` and `-shm` files the mode of the database
//! file, so all three stay private without a window where they are readable by others.
//!
//! The environment is read in one place, [`LocationEnv::from_process`]; resolving a directory
//! from it is a pure function so every platform's rule is testable on any machine.

use std::ffi::OsString;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::error::{Result, StoreError};

/// The environment variable that overrides the data directory.
pub const DATA_DIR_ENV: &str = "MAGIC_CONTEXT_DATA_DIR";
/// The database's file name inside the data directory.
pub const DB_FILE_NAME: &str = "context.db";
/// The directory magic-context owns inside the platform's data directory.
pub const APP_DIR_NAME: &str = "magic-context";

/// The environment values that decide the data directory.
///
/// Empty values count as unset, as shells often export `VAR=` to clear a variable.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LocationEnv {
    /// `MAGIC_CONTEXT_DATA_DIR`.
    pub data_dir: Option<OsString>,
    /// `XDG_DATA_HOME` (Linux and other Unixes only; ignored unless absolute, as the XDG spec says).
    pub xdg_data_home: Option<OsString>,
    /// The user's home directory.
    pub home: Option<OsString>,
    /// `LOCALAPPDATA` (Windows only).
    pub local_app_data: Option<OsString>,
}

impl LocationEnv {
    /// Reads the variables of the running process.
    pub fn from_process() -> Self {
        Self {
            data_dir: std::env::var_os(DATA_DIR_ENV),
            xdg_data_home: std::env::var_os("XDG_DATA_HOME"),
            home: std::env::home_dir().map(PathBuf::into_os_string),
            local_app_data: std::env::var_os("LOCALAPPDATA"),
        }
    }
}

/// Which platform convention to follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Platform {
    /// Linux and other Unixes: `$XDG_DATA_HOME`, else `~/.local/share`.
    Xdg,
    /// macOS: `~/Library/Application Support`.
    MacOs,
    /// Windows: `%LOCALAPPDATA%`.
    Windows,
}

impl Platform {
    /// The platform this binary was built for.
    pub fn current() -> Self {
        if cfg!(target_os = "macos") {
            Self::MacOs
        } else if cfg!(windows) {
            Self::Windows
        } else {
            Self::Xdg
        }
    }
}

/// Who chose the data directory; decides whether we may change an existing directory's mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DirOwner {
    /// The user named it with `MAGIC_CONTEXT_DATA_DIR`: an existing directory is theirs and is
    /// left as it is.
    User,
    /// Our own `magic-context` directory under the platform's data directory: tightened to
    /// 0700 even if something else created it looser.
    Us,
}

/// The resolved data directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataLocation {
    /// The directory holding `context.db`.
    pub dir: PathBuf,
    /// Who chose it.
    pub owner: DirOwner,
}

impl DataLocation {
    /// The database file inside the directory.
    pub fn db_path(&self) -> PathBuf {
        self.dir.join(DB_FILE_NAME)
    }
}

fn non_empty(value: Option<&OsString>) -> Option<&OsString> {
    value.filter(|value| !value.is_empty())
}

/// Resolves the data directory from environment values, without touching the file system.
pub fn resolve_data_dir(env: &LocationEnv, platform: Platform) -> Result<DataLocation> {
    if let Some(dir) = non_empty(env.data_dir.as_ref()) {
        return Ok(DataLocation {
            dir: PathBuf::from(dir),
            owner: DirOwner::User,
        });
    }
    let home = non_empty(env.home.as_ref()).map(PathBuf::from);
    let base = match platform {
        Platform::Xdg => non_empty(env.xdg_data_home.as_ref())
            .map(PathBuf::from)
            .filter(|dir| dir.is_absolute())
            .or_else(|| home.map(|home| home.join(".local").join("share"))),
        Platform::MacOs => home.map(|home| home.join("Library").join("Application Support")),
        Platform::Windows => non_empty(env.local_app_data.as_ref()).map(PathBuf::from),
    };
    let base = base.ok_or(StoreError::NoDataDir)?;
    Ok(DataLocation {
        dir: base.join(APP_DIR_NAME),
        owner: DirOwner::Us,
    })
}

/// Makes sure the database's directory exists (0700 when we create it) and the database file
/// exists (0600 when we create it), and that this process can open the file for writing.
///
/// An existing directory chosen by the user keeps its mode; our own directory is tightened to
/// 0700. An existing file keeps its mode: changing the mode of a file someone else set up is
/// not ours to do.
pub(crate) fn prepare_db_file(path: &Path, dir_owner: DirOwner) -> Result<()> {
    if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        prepare_dir(dir, dir_owner).map_err(|source| StoreError::DataDir {
            path: dir.to_path_buf(),
            source,
        })?;
    }
    prepare_file(path).map_err(|source| {
        let path = path.to_path_buf();
        if is_read_only(&path, &source) {
            StoreError::ReadOnly {
                path,
                source: Box::new(source),
            }
        } else {
            StoreError::Unreadable { path, source }
        }
    })
}

/// Whether opening `path` for writing failed only because it may not be written: the file
/// system is mounted read-only, or the file opens for reading but not for writing.
fn is_read_only(path: &Path, error: &io::Error) -> bool {
    match error.kind() {
        io::ErrorKind::ReadOnlyFilesystem => true,
        io::ErrorKind::PermissionDenied => fs::File::open(path).is_ok(),
        _ => false,
    }
}

fn prepare_dir(dir: &Path, owner: DirOwner) -> io::Result<()> {
    match fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => {
            if owner == DirOwner::Us {
                make_private(dir, PRIVATE_DIR_MODE)?;
            }
            Ok(())
        }
        Ok(_) => Err(io::Error::new(
            io::ErrorKind::NotADirectory,
            "it exists and is not a directory",
        )),
        Err(err) if err.kind() == io::ErrorKind::NotFound => {
            if let Some(parent) = dir.parent().filter(|parent| !parent.as_os_str().is_empty()) {
                fs::create_dir_all(parent)?;
            }
            match create_private_dir(dir) {
                // We made it: set the exact mode, whatever the umask removed or left.
                Ok(()) => set_mode(dir, PRIVATE_DIR_MODE),
                // Another process made it between our look and our create; it made it private.
                Err(err) if err.kind() == io::ErrorKind::AlreadyExists => Ok(()),
                Err(err) => Err(err),
            }
        }
        Err(err) => Err(err),
    }
}

/// Creates `path` as a new, empty file only its owner may read (0600); an existing file is
/// an error (`AlreadyExists`), never replaced.
pub(crate) fn create_private_new_file(path: &Path) -> io::Result<()> {
    create_private_file(path)?;
    set_mode(path, PRIVATE_FILE_MODE)
}

fn prepare_file(path: &Path) -> io::Result<()> {
    match create_private_file(path) {
        Ok(()) => set_mode(path, PRIVATE_FILE_MODE),
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {
            // Open it the way SQLite will, so a permission problem surfaces as an io::Error
            // naming the cause rather than SQLite's terse "unable to open database file".
            fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(path)
                .map(drop)
        }
        Err(err) => Err(err),
    }
}

const PRIVATE_DIR_MODE: u32 = 0o700;
const PRIVATE_FILE_MODE: u32 = 0o600;

#[cfg(unix)]
fn create_private_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    fs::DirBuilder::new().mode(PRIVATE_DIR_MODE).create(dir)
}

#[cfg(unix)]
fn create_private_file(path: &Path) -> io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(PRIVATE_FILE_MODE)
        .open(path)
        .map(drop)
}

#[cfg(unix)]
fn set_mode(path: &Path, mode: u32) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(mode))
}

/// Removes group and other access if there is any; leaves an already-private entry alone.
#[cfg(unix)]
fn make_private(path: &Path, mode: u32) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    if fs::metadata(path)?.permissions().mode() & 0o077 != 0 {
        set_mode(path, mode)?;
    }
    Ok(())
}

// Windows has no mode bits; the per-user profile directory is already private.
#[cfg(not(unix))]
fn create_private_dir(dir: &Path) -> io::Result<()> {
    fs::create_dir(dir)
}

#[cfg(not(unix))]
fn create_private_file(path: &Path) -> io::Result<()> {
    fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(path)
        .map(drop)
}

#[cfg(not(unix))]
fn set_mode(_path: &Path, _mode: u32) -> io::Result<()> {
    Ok(())
}

#[cfg(not(unix))]
fn make_private(_path: &Path, _mode: u32) -> io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(data_dir: &str, xdg: &str, home: &str) -> LocationEnv {
        let var = |value: &str| (!value.is_empty()).then(|| OsString::from(value));
        LocationEnv {
            data_dir: var(data_dir),
            xdg_data_home: var(xdg),
            home: var(home),
            local_app_data: None,
        }
    }

    fn dir(env: &LocationEnv, platform: Platform) -> Option<DataLocation> {
        resolve_data_dir(env, platform).ok()
    }

    #[test]
    fn override_wins_everywhere() {
        let env = env("/srv/mc", "/xdg", "/home/ada");
        for platform in [Platform::Xdg, Platform::MacOs, Platform::Windows] {
            assert_eq!(
                dir(&env, platform),
                Some(DataLocation {
                    dir: "/srv/mc".into(),
                    owner: DirOwner::User
                })
            );
        }
    }

    #[test]
    fn xdg_rules() {
        let ours = |path: &str| {
            Some(DataLocation {
                dir: path.into(),
                owner: DirOwner::Us,
            })
        };
        assert_eq!(
            dir(&env("", "/xdg", "/home/ada"), Platform::Xdg),
            ours("/xdg/magic-context")
        );
        assert_eq!(
            dir(&env("", "", "/home/ada"), Platform::Xdg),
            ours("/home/ada/.local/share/magic-context")
        );
        // A relative XDG_DATA_HOME is invalid per the spec and ignored.
        assert_eq!(
            dir(&env("", "rel/xdg", "/home/ada"), Platform::Xdg),
            ours("/home/ada/.local/share/magic-context")
        );
        assert_eq!(
            dir(&env("", "/xdg", "/Users/ada"), Platform::MacOs),
            ours("/Users/ada/Library/Application Support/magic-context")
        );
        let windows = LocationEnv {
            local_app_data: Some("C:\\Local".into()),
            ..LocationEnv::default()
        };
        assert_eq!(
            dir(&windows, Platform::Windows).map(|location| location.dir),
            Some(Path::new("C:\\Local").join("magic-context"))
        );
    }

    #[test]
    fn nothing_set_is_a_clear_error() {
        let err = resolve_data_dir(&env("", "", ""), Platform::Xdg).unwrap_err();
        assert!(matches!(err, StoreError::NoDataDir));
        assert!(err.to_string().contains("MAGIC_CONTEXT_DATA_DIR"));
    }

    #[test]
    fn db_path_is_inside_the_dir() {
        let location = DataLocation {
            dir: "/srv/mc".into(),
            owner: DirOwner::User,
        };
        assert_eq!(location.db_path(), Path::new("/srv/mc/context.db"));
    }
}

//! Which files make up the configuration.
//!
//! The environment is read here and nowhere else in the crate, through an injectable lookup,
//! so tests never have to mutate the process environment.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The files that are layered over the defaults, lowest first: user, then project.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConfigSources {
    /// The user-level file.
    pub user: Option<PathBuf>,
    /// Set when [`ConfigSources::ENV_CONFIG`] named the user file: a typo there is reported
    /// instead of silently running on defaults.
    pub user_must_exist: bool,
    /// The project-level file; its keys win over the user file's.
    pub project: Option<PathBuf>,
}

impl ConfigSources {
    /// Environment variable naming the user file explicitly (instead of the XDG location).
    pub const ENV_CONFIG: &'static str = "MAGIC_CONTEXT_CONFIG";
    /// Name of the project file in the project root.
    pub const PROJECT_FILE: &'static str = ".magic-context.jsonc";
    /// Directory and file name of the user file under the config home.
    pub const USER_FILE: [&'static str; 2] = ["magic-context", "magic-context.jsonc"];

    /// The files for `project_root` on this machine: the user file is
    /// `$MAGIC_CONTEXT_CONFIG`, else `$XDG_CONFIG_HOME/magic-context/magic-context.jsonc`,
    /// else `$HOME/.config/magic-context/magic-context.jsonc`; the project file is
    /// `<project_root>/.magic-context.jsonc`.
    pub fn discover(project_root: Option<&Path>) -> Self {
        Self::from_env(|name| std::env::var_os(name), project_root)
    }

    /// [`ConfigSources::discover`] with an explicit environment lookup.
    pub fn from_env(var: impl Fn(&str) -> Option<OsString>, project_root: Option<&Path>) -> Self {
        let non_empty = |name: &str| var(name).filter(|value| !value.is_empty());
        let project = project_root.map(|root| root.join(Self::PROJECT_FILE));
        if let Some(explicit) = non_empty(Self::ENV_CONFIG) {
            return Self {
                user: Some(PathBuf::from(explicit)),
                user_must_exist: true,
                project,
            };
        }
        // The XDG spec says relative values are invalid and must be ignored.
        let config_home = non_empty("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .filter(|path| path.is_absolute())
            .or_else(|| non_empty("HOME").map(|home| PathBuf::from(home).join(".config")));
        let user = config_home.map(|home| {
            Self::USER_FILE
                .iter()
                .fold(home, |path, part| path.join(part))
        });
        Self {
            user,
            user_must_exist: false,
            project,
        }
    }
}

/// The project root for `start`: the nearest directory at or above it holding `.git` (a
/// directory, or a file in worktrees and submodules), else `start` itself.
pub fn find_project_root(start: &Path) -> PathBuf {
    start
        .ancestors()
        .find(|dir| dir.join(".git").exists())
        .unwrap_or(start)
        .to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| OsString::from(v))
        }
    }

    #[test]
    fn xdg_config_home_wins_over_home() {
        let sources = ConfigSources::from_env(
            env(&[("XDG_CONFIG_HOME", "/xdg"), ("HOME", "/home/u")]),
            None,
        );
        assert_eq!(
            sources.user,
            Some(PathBuf::from("/xdg/magic-context/magic-context.jsonc"))
        );
        assert!(!sources.user_must_exist);
        assert_eq!(sources.project, None);
    }

    #[test]
    fn home_fallback_and_relative_xdg_ignored() {
        let sources = ConfigSources::from_env(
            env(&[("XDG_CONFIG_HOME", "relative"), ("HOME", "/home/u")]),
            Some(Path::new("/repo")),
        );
        assert_eq!(
            sources.user,
            Some(PathBuf::from(
                "/home/u/.config/magic-context/magic-context.jsonc"
            ))
        );
        assert_eq!(
            sources.project,
            Some(PathBuf::from("/repo/.magic-context.jsonc"))
        );
    }

    #[test]
    fn explicit_file_must_exist() {
        let sources = ConfigSources::from_env(
            env(&[("MAGIC_CONTEXT_CONFIG", "/etc/mc.jsonc"), ("HOME", "/h")]),
            None,
        );
        assert_eq!(sources.user, Some(PathBuf::from("/etc/mc.jsonc")));
        assert!(sources.user_must_exist);
        assert_eq!(
            ConfigSources::from_env(env(&[]), None),
            ConfigSources::default()
        );
    }

    #[test]
    fn project_root_is_the_nearest_git_dir() {
        let dir = tempfile::tempdir().unwrap();
        let nested = dir.path().join("repo/src/deep");
        std::fs::create_dir_all(&nested).unwrap();
        std::fs::create_dir(dir.path().join("repo/.git")).unwrap();
        assert_eq!(find_project_root(&nested), dir.path().join("repo"));
        let outside = dir.path().join("other");
        std::fs::create_dir(&outside).unwrap();
        // tempdirs live under /tmp, which is not inside a repository
        assert_eq!(find_project_root(&outside), outside);
    }
}

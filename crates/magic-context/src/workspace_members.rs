//! The configured workspaces, identified once for a command that renders, searches or
//! checks them.

use mc_core::config::Config;
use mc_core::workspace::Workspaces;
use mc_proxy::UnknownMember;

/// `config`'s workspaces with each member root identified as a project (`~` is `$HOME`),
/// and the roots that name no project yet.
pub fn identify_members(config: &Config) -> (Workspaces, Vec<UnknownMember>) {
    if config.workspaces.is_empty() {
        return (Workspaces::default(), Vec::new());
    }
    let home = std::env::var_os("HOME")
        .filter(|home| !home.is_empty())
        .map(std::path::PathBuf::from);
    mc_proxy::identify_workspaces(&config.workspaces, home.as_deref())
}

/// [`identify_members`], logging each root that shares nothing.
pub fn configured_workspaces(config: &Config) -> Workspaces {
    let (workspaces, unknown) = identify_members(config);
    for member in unknown {
        tracing::warn!(%member, "workspace member not found");
    }
    workspaces
}

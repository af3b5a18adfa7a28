//! Which configuration files the dashboard shows and edits: the user file the proxy was
//! started with ([`crate::ProxySettings::user_config`]), and the file of a project whose
//! folder the store knows.

use mc_config::ConfigSources;
use mc_store::ReadTx;

use super::config::{ConfigQuery, ConfigView, SaveConfig, save, view};
use super::error::DashboardError;
use super::memories::project_id;
use super::store_work;
use crate::app::App;

/// The projects whose folder the store knows, sorted.
pub fn projects_with_folders(tx: &ReadTx<'_>) -> mc_store::Result<Vec<String>> {
    let mut projects: Vec<String> = tx
        .project_folders()?
        .into_keys()
        .map(|project| project.as_str().to_owned())
        .collect();
    projects.sort();
    Ok(projects)
}

/// The files for `project` (none: the user file alone), or why not.
async fn sources(app: &App, project: Option<&str>) -> Result<ConfigSources, DashboardError> {
    let user = app.settings.user_config.clone();
    let Some(raw) = project.filter(|raw| !raw.trim().is_empty()) else {
        return Ok(ConfigSources {
            user,
            user_must_exist: false,
            project: None,
        });
    };
    let project = project_id(Some(raw))?;
    let wanted = project.clone();
    let folder = store_work::read(app, move |tx| {
        Ok(tx.project_folders()?.remove(&wanted))
    })
    .await?
    .ok_or_else(|| {
        DashboardError::NotFound(format!(
            "no folder is known for project `{project}`: it has a file only where a session of it named its folder"
        ))
    })?;
    Ok(ConfigSources {
        user,
        user_must_exist: false,
        project: Some(std::path::Path::new(&folder).join(ConfigSources::PROJECT_FILE)),
    })
}

/// The configuration view for `query`, read on the blocking pool.
pub async fn read_view(app: &App, query: &ConfigQuery) -> Result<ConfigView, DashboardError> {
    let sources = sources(app, query.project.as_deref()).await?;
    let project = query.project.clone().filter(|raw| !raw.trim().is_empty());
    tokio::task::spawn_blocking(move || view(&sources, project))
        .await
        .map_err(|error| DashboardError::Unavailable(error.to_string()))
}

/// Saves `change` once it checks, then answers the view as it now stands.
pub async fn save_change(app: &App, change: SaveConfig) -> Result<ConfigView, DashboardError> {
    let project = change.project.clone().filter(|raw| !raw.trim().is_empty());
    if change.layer == "project" && project.is_none() {
        return Err(DashboardError::BadRequest(
            "name the project whose file this is: \"project\": ID".to_owned(),
        ));
    }
    let sources = sources(app, project.as_deref()).await?;
    tokio::task::spawn_blocking(move || {
        save(&sources, &change.layer, &change.text)?;
        Ok(view(&sources, project))
    })
    .await
    .map_err(|error| DashboardError::Unavailable(error.to_string()))?
}

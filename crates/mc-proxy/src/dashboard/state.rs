//! What every page, API call and the access guard share: where the dashboard lives, and
//! the proxy's state with the access token.

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::OnceCell;

use super::access_token::{self, AccessToken};
use super::error::DashboardError;
use crate::app::App;

/// Where the pages live.
pub const UI_PREFIX: &str = "/_magic-context/ui";

/// Where the JSON API lives.
pub const API_PREFIX: &str = "/_magic-context/api";

/// The sessions page, where the login URL sends the browser.
pub const UI_HOME: &str = "/_magic-context/ui/";

/// What the dashboard's handlers share: the proxy's state and the access token, read from
/// the data directory the first time a request needs it.
pub struct Dashboard {
    /// The proxy's state.
    pub app: Arc<App>,
    token: OnceCell<AccessToken>,
}

impl Dashboard {
    /// The dashboard over `app`; the token is read when first needed.
    pub fn new(app: Arc<App>) -> Self {
        Self {
            app,
            token: OnceCell::new(),
        }
    }

    /// The access token of the store's data directory, read (or created) once.
    pub async fn token(&self) -> Result<&AccessToken, DashboardError> {
        self.token
            .get_or_try_init(|| async {
                let dir = self.data_dir().await?;
                tokio::task::spawn_blocking(move || access_token::load_or_create(&dir))
                    .await
                    .map_err(|error| DashboardError::Unavailable(error.to_string()))?
                    .map_err(|error| DashboardError::Unavailable(error.to_string()))
            })
            .await
    }

    /// The data directory: the folder of the open store (the token lives beside it).
    async fn data_dir(&self) -> Result<PathBuf, DashboardError> {
        self.app.store.open_if_closed().await;
        let engine = self.app.engine().map_err(DashboardError::Unavailable)?;
        engine
            .store()
            .path()
            .parent()
            .map(std::path::Path::to_path_buf)
            .ok_or_else(|| {
                DashboardError::Unavailable("the store has no data directory".to_owned())
            })
    }
}

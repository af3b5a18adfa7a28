//! What a dashboard request can fail with, and the answer each failure gets.
//!
//! API answers are JSON (`{"error": "..."}`; a change queued for a team store that does not
//! answer is `202` with `{"queued": WRITE_ID, "message": "..."}`); page answers are a short
//! HTML page saying the same. Neither ever carries a header or a body of a proxied call.

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use maud::html;
use serde_json::json;

/// Why a dashboard request was not answered with what it asked for.
#[derive(Debug, thiserror::Error)]
pub enum DashboardError {
    /// No valid access token came with the request.
    #[error("the dashboard needs its access token: open the URL `magic-context dashboard` prints")]
    Unauthorized,
    /// The request may not be answered here (not from this machine, a foreign `Host`, a
    /// mutation without the token header).
    #[error("{0}")]
    Forbidden(String),
    /// What the request names does not exist.
    #[error("{0}")]
    NotFound(String),
    /// The request is malformed or asks for something that cannot be done.
    #[error("{0}")]
    BadRequest(String),
    /// The store is not open (or the data directory cannot be found).
    #[error("the store is not available: {0}")]
    Unavailable(String),
    /// The change was accepted but waits in the team write queue: the team store does not
    /// answer. Not a failure (202): a client that retried would make the change twice.
    #[error(
        "the team store does not answer: the change waits in the local queue (write \
         {write_id}) and lands when it returns"
    )]
    Queued {
        /// The id the queued write is sent under.
        write_id: String,
    },
}

impl DashboardError {
    /// The HTTP status of the failure.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::Unauthorized => StatusCode::UNAUTHORIZED,
            Self::Forbidden(_) => StatusCode::FORBIDDEN,
            Self::NotFound(_) => StatusCode::NOT_FOUND,
            Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            Self::Queued { .. } => StatusCode::ACCEPTED,
        }
    }

    /// Logs a failure that is the proxy's, not the request's (the store or the token file).
    /// Called once, by whichever of the two answers ([`Self::into_page`], the JSON one) is
    /// given.
    fn log(&self) {
        if let Self::Unavailable(reason) = self {
            tracing::warn!(%reason, "a dashboard request failed on the proxy's side");
        }
    }

    /// The failure as a page, for the HTML routes.
    pub fn into_page(self) -> Response {
        self.log();
        let status = self.status();
        let markup = html! {
            (maud::DOCTYPE)
            html lang="en" {
                head { meta charset="utf-8"; title { "Magic Context: " (status.as_u16()) } }
                body { h1 { "Magic Context" } p { (self.to_string()) } }
            }
        };
        (
            status,
            [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
            markup.into_string(),
        )
            .into_response()
    }
}

impl From<mc_store::StoreError> for DashboardError {
    /// What the operator asked for wrongly (an unknown memory, a duplicate, an empty fact)
    /// is their error to fix; anything else is the store's.
    fn from(error: mc_store::StoreError) -> Self {
        use mc_store::StoreError as Store;
        match error {
            Store::UnknownMemory { .. } | Store::UnknownSession { .. } => {
                Self::NotFound(error.to_string())
            }
            Store::DuplicateMemory { .. } | Store::EmptyMemory | Store::MemoryRefused { .. } => {
                Self::BadRequest(error.to_string())
            }
            Store::NoDataDir
            | Store::DataDir { .. }
            | Store::Unreadable { .. }
            | Store::Inaccessible { .. }
            | Store::Corrupt { .. }
            | Store::ForeignDatabase { .. }
            | Store::SchemaTooNew { .. }
            | Store::Migration { .. }
            | Store::NotWal { .. }
            | Store::FtsUnavailable
            | Store::Busy { .. }
            | Store::ReadOnly { .. }
            | Store::DiskFull { .. }
            | Store::Sqlite { .. }
            | Store::SessionExists { .. }
            | Store::OrdinalGap { .. }
            | Store::CompartmentGap { .. }
            | Store::RebuildIncomplete { .. }
            | Store::ForkBeyondEnd { .. }
            | Store::Encode { .. }
            | Store::CorruptRow { .. }
            | Store::CorruptSession { .. }
            | Store::BackupExists { .. }
            | Store::Backup { .. }
            | Store::File { .. }
            | Store::NotAStore { .. }
            | Store::BackupTooNew { .. }
            | Store::PreviousKept { .. }
            | Store::StoreInUse { .. }
            | Store::TeamStore { .. } => Self::Unavailable(error.to_string()),
            Store::QueuedForTeam { write_id } => Self::Queued { write_id },
        }
    }
}

impl From<QueryRejection> for DashboardError {
    fn from(rejection: QueryRejection) -> Self {
        Self::BadRequest(format!(
            "the query string is not what this route takes: {}",
            rejection.body_text()
        ))
    }
}

impl From<JsonRejection> for DashboardError {
    fn from(rejection: JsonRejection) -> Self {
        Self::BadRequest(format!(
            "the request body is not what this route takes: {}",
            rejection.body_text()
        ))
    }
}

impl IntoResponse for DashboardError {
    fn into_response(self) -> Response {
        self.log();
        let body = match &self {
            Self::Queued { write_id } => json!({"queued": write_id, "message": self.to_string()}),
            Self::Unauthorized
            | Self::Forbidden(_)
            | Self::NotFound(_)
            | Self::BadRequest(_)
            | Self::Unavailable(_) => json!({"error": self.to_string()}),
        };
        (self.status(), axum::Json(body)).into_response()
    }
}

/// A failure on a page route, answered as a page.
pub struct PageError(pub DashboardError);

impl From<DashboardError> for PageError {
    fn from(error: DashboardError) -> Self {
        Self(error)
    }
}

impl From<QueryRejection> for PageError {
    fn from(rejection: QueryRejection) -> Self {
        Self(rejection.into())
    }
}

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        self.0.into_page()
    }
}

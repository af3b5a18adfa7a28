//! The dashboard's stylesheet and script, compiled into the binary: nothing is fetched or
//! built at run time, and the pages' content security policy allows only these.

use axum::extract::Path;
use axum::http::header;
use axum::response::{IntoResponse, Response};

use super::error::DashboardError;

/// The stylesheet.
const CSS: &str = include_str!("assets/dashboard.css");

/// The script: form changes sent with the token header, live refresh.
const JS: &str = include_str!("assets/dashboard.js");

/// `GET /_magic-context/ui/assets/{name}`.
pub async fn asset(Path(name): Path<String>) -> Response {
    let (kind, body) = match name.as_str() {
        "dashboard.css" => ("text/css; charset=utf-8", CSS),
        "dashboard.js" => ("text/javascript; charset=utf-8", JS),
        _ => {
            return DashboardError::NotFound(format!("no dashboard asset `{name}`"))
                .into_response();
        }
    };
    ([(header::CONTENT_TYPE, kind)], body).into_response()
}

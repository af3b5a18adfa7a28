//! The frame every page shares: the navigation, the stylesheet, the script, and the token
//! the script sends with changes.
//!
//! The token is in a `<meta>` of pages only someone holding it (as the cookie) can load, and
//! no other origin can read them (no CORS header, `frame-ancestors 'none'`): the script
//! needs it to send changes with the header a cross-site form cannot forge.

use axum::response::Html;
use maud::{DOCTYPE, Markup, html};

/// Which page is shown, for the navigation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    /// The sessions list and a session's page.
    Sessions,
    /// The memories page.
    Memories,
    /// The historian's and the dreamer's runs.
    Runs,
    /// One search over everything stored.
    Search,
    /// The effective configuration and its files.
    Config,
}

/// What a page puts in the frame.
pub struct Page<'a> {
    /// The `<title>` and heading.
    pub title: &'a str,
    /// Which navigation entry is current.
    pub section: Section,
    /// The access token, for the script's changes.
    pub token: &'a str,
    /// The API URL whose answer the script watches; the page reloads when it changes.
    pub refresh_from: Option<String>,
    /// The page's own content.
    pub body: Markup,
}

/// The page, framed.
pub fn render(page: Page<'_>) -> Html<String> {
    let current = |section: Section| {
        if section == page.section {
            "current"
        } else {
            ""
        }
    };
    let markup = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="mc-token" content=(page.token);
                title { (page.title) " · Magic Context" }
                link rel="stylesheet" href="/_magic-context/ui/assets/dashboard.css";
                script src="/_magic-context/ui/assets/dashboard.js" defer {}
            }
            body data-refresh=[page.refresh_from.as_deref()] {
                nav {
                    span.brand { "Magic Context" }
                    a class=(current(Section::Sessions)) href="/_magic-context/ui/" { "Sessions" }
                    a class=(current(Section::Memories)) href="/_magic-context/ui/memories" { "Memories" }
                    a class=(current(Section::Runs)) href="/_magic-context/ui/runs" { "Runs" }
                    a class=(current(Section::Search)) href="/_magic-context/ui/search" { "Search" }
                    a class=(current(Section::Config)) href="/_magic-context/ui/config" { "Config" }
                }
                main {
                    h1 { (page.title) }
                    p #flash role="status" {}
                    (page.body)
                }
            }
        }
    };
    Html(markup.into_string())
}

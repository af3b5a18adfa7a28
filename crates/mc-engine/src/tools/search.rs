//! `ctx_search`: the unified search, as the agent asks it.
//!
//! Goes through [`crate::search::search`] like the operator's command and the recall
//! benchmark, within the caller's project, with the caller's session as the viewer so what
//! its live context already shows is left out. Message hits carry their session and ordinals,
//! which `ctx_expand` takes; memories another project of the caller's workspaces shares come
//! back named with that project and marked read-only.

use mc_core::search::FusionWeights;
use mc_store::SearchScope;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{ToolAnswer, ToolContext, bound_project};
use crate::search::{
    DayEnd, HitPlace, MAX_LIMIT, SearchError, SearchHit, SearchRequest, date_bound_ms,
    record_retrieved_memories, search,
};

pub(super) const NAME: &str = "ctx_search";
pub(super) const DESCRIPTION: &str = "Search this project's history: memories, notes, earlier \
messages of every session, history summaries and git commits, by words and meaning. Results already in \
your context are left out; message results give ordinals to pass to ctx_expand. Use it before \
asking the user something that may have been settled earlier.";

/// Results when the model does not say.
const DEFAULT_LIMIT: usize = 10;

/// Arguments of `ctx_search`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// What to look for, in plain words.
    pub query: String,
    /// How many results, 1 to 100 [default: 10].
    #[serde(default)]
    pub limit: Option<usize>,
    /// Only what happened on or after this day (YYYY-MM-DD, UTC) or time (RFC 3339).
    #[serde(default)]
    pub since: Option<String>,
    /// Only what happened on or before this day (YYYY-MM-DD, UTC) or before this time.
    #[serde(default)]
    pub until: Option<String>,
}

pub(super) fn run(ctx: &ToolContext<'_>, args: &SearchArgs) -> ToolAnswer {
    let project = match bound_project(ctx, NAME) {
        Ok(project) => project.clone(),
        Err(answer) => return answer,
    };
    let limit = args.limit.unwrap_or(DEFAULT_LIMIT);
    if limit == 0 || limit > MAX_LIMIT {
        return ToolAnswer::error(format!(
            "limit must be between 1 and {MAX_LIMIT}, not {limit}"
        ));
    }
    let since_ms = match args
        .since
        .as_deref()
        .map(|text| day_ms(text, false))
        .transpose()
    {
        Ok(ms) => ms,
        Err(answer) => return answer,
    };
    let until_ms = match args
        .until
        .as_deref()
        .map(|text| day_ms(text, true))
        .transpose()
    {
        Ok(ms) => ms,
        Err(answer) => return answer,
    };
    if let (Some(since), Some(until)) = (since_ms, until_ms)
        && until <= since
    {
        return ToolAnswer::error("until is not after since; swap them or widen the window");
    }
    let shared = ctx.engine.workspaces().shared_with(&project);
    let request = SearchRequest {
        query: args.query.clone(),
        scope: SearchScope {
            project: Some(project),
            session: None,
            since_ms,
            until_ms,
        },
        viewer: ctx.session.clone(),
        limit,
        shared,
        knowledge: ctx.engine.knowledge_source(),
    };
    match search(
        ctx.engine.store(),
        &request,
        ctx.semantic,
        &FusionWeights::default(),
    ) {
        Ok(hits) => {
            // Use is bookkeeping for maintenance: the agent gets its answer either way.
            if let Err(error) =
                record_retrieved_memories(ctx.engine.store(), &request, &hits, ctx.now_ms)
            {
                tracing::warn!(%error, "ctx_search: the memories it returned were not recorded as used");
            }
            ToolAnswer::ok(as_text(&hits))
        }
        Err(SearchError::Store(error)) => ToolAnswer::store(&error),
        Err(SearchError::Semantic(reason)) => ToolAnswer::error(format!(
            "semantic search failed ({reason}); try again, or rephrase with the exact words"
        )),
        Err(error @ SearchError::TooLong(_)) => ToolAnswer::error(error.to_string()),
        Err(error @ (SearchError::Query(_) | SearchError::Limit(_))) => {
            ToolAnswer::error(format!("{error}; search for one or more plain words"))
        }
    }
}

/// `text` as unix milliseconds (a day, or for `until` the day after it), or the error the
/// agent gets.
fn day_ms(text: &str, until: bool) -> Result<i64, ToolAnswer> {
    let end = if until { DayEnd::After } else { DayEnd::Start };
    date_bound_ms(text, end).map_err(ToolAnswer::error)
}

fn as_text(hits: &[SearchHit]) -> String {
    if hits.is_empty() {
        return "no results outside what you already see".to_owned();
    }
    let mut out = String::new();
    for (rank, hit) in hits.iter().enumerate() {
        // Notes are read back with their own tool.
        let place = match &hit.place {
            HitPlace::Note { .. } => format!("{} (ctx_note)", hit.place),
            other => other.to_string(),
        };
        out.push_str(&format!(
            "{}. {} · {place}\n   {}\n",
            rank + 1,
            hit.source,
            hit.preview
        ));
    }
    out
}

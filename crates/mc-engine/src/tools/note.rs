//! `ctx_note`: notes the agent leaves itself.
//!
//! A session note is a reminder for the rest of this session (a plan, a deferred check). A
//! smart note carries a condition ("when the CI config changes") and belongs to the project:
//! it waits as pending until the dreamer's `evaluate_smart_notes` finds the condition holds,
//! and is then listed as due (and in `m[1]` from the next rebuild). With a team store a smart
//! note is the team's: every proxy of the team caches it, and a change to it on any of them
//! reaches the others (`mc-store`'s `team_notes.rs`).

use mc_store::{NewNote, NoteOwner, NoteStatus, StoreError, StoredNote};
use schemars::JsonSchema;
use serde::Deserialize;

use super::{ToolAnswer, ToolContext, bound_session};

pub(super) const NAME: &str = "ctx_note";
pub(super) const DESCRIPTION: &str = "Keep notes for yourself. write: content (a session note you \
can read back later in this session), or content + surface_condition (a smart note for this \
project, to resurface when the condition holds). read: all your open notes with their ids. \
update: note_id + content and/or surface_condition. dismiss: note_id, once a note is done.";

/// What to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NoteAction {
    /// Store a note.
    Write,
    /// Show the open notes.
    Read,
    /// Rewrite a note.
    Update,
    /// Retire a note.
    Dismiss,
}

/// Arguments of `ctx_note`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoteArgs {
    /// What to do.
    pub action: NoteAction,
    /// The note's text (write, update).
    #[serde(default)]
    pub content: Option<String>,
    /// For a smart note: when it should resurface, in plain words.
    #[serde(default)]
    pub surface_condition: Option<String>,
    /// The note to change (update, dismiss), as read shows it.
    #[serde(default)]
    pub note_id: Option<u64>,
}

pub(super) fn run(ctx: &ToolContext<'_>, args: &NoteArgs) -> ToolAnswer {
    let content = non_blank(args.content.as_deref());
    let condition = non_blank(args.surface_condition.as_deref());
    if args.action == NoteAction::Write && content.is_none() {
        return ToolAnswer::error("write needs content: the note's text");
    }
    // A smart note written with a team store is the team's: it is named by a fresh write id
    // and its add is queued with it, for the background sync to send.
    let team_origin = match (args.action, condition, ctx.engine.team_store()) {
        (NoteAction::Write, Some(_), Some(_)) => match mc_team_store::new_write_id() {
            Ok(origin) => Some(origin),
            Err(error) => return ToolAnswer::error(error.to_string()),
        },
        _ => None,
    };
    let result = ctx.engine.store().write_with(|tx| {
        // A smart note needs only the project; everything else needs the session.
        let smart_write = args.action == NoteAction::Write && condition.is_some();
        let session = if smart_write && ctx.session.is_none() {
            None
        } else {
            match bound_session(tx, ctx, NAME)? {
                Ok(session) => Some(session),
                Err(answer) => return Ok(answer),
            }
        };
        let owner = NoteOwner {
            session: session.as_ref(),
            project: ctx.project.as_ref(),
        };
        match (args.action, args.note_id) {
            (NoteAction::Write, _) => {
                if condition.is_some() && ctx.project.is_none() {
                    return Ok(ToolAnswer::error(
                        "a smart note belongs to a project, and this server has none; drop \
                         surface_condition for a session note",
                    ));
                }
                let note = NewNote {
                    project: ctx.project.as_ref(),
                    session: session.as_ref(),
                    content: content.unwrap_or_default(),
                    surface_condition: condition,
                };
                let id = tx.add_note(&note, ctx.now_ms)?;
                let shared = match (&team_origin, ctx.project.as_ref()) {
                    (Some(origin), Some(project)) => {
                        tx.share_note_with_team(project, id, origin, ctx.now_ms)?
                    }
                    _ => false,
                };
                Ok(ToolAnswer::ok(match condition {
                    Some(_) => format!(
                        "saved smart note {id} for this project{}; it is pending until the \
                         dreamer evaluates its condition, and will resurface once that holds",
                        if shared { " and its team" } else { "" }
                    ),
                    None => format!("saved note {id}; read your notes with action read"),
                }))
            }
            (NoteAction::Read, _) => Ok(ToolAnswer::ok(listing(&tx.notes(owner)?))),
            (NoteAction::Update | NoteAction::Dismiss, None) => Ok(ToolAnswer::error(
                "update and dismiss need note_id; action read lists your notes with their ids",
            )),
            (NoteAction::Update, Some(_)) if content.is_none() && condition.is_none() => Ok(
                ToolAnswer::error("update needs content or surface_condition (or both) to change"),
            ),
            (NoteAction::Update, Some(id)) => {
                if tx.update_note(owner, id, content, condition, ctx.now_ms)? {
                    Ok(ToolAnswer::ok(format!("updated note {id}")))
                } else {
                    Ok(not_found(id))
                }
            }
            (NoteAction::Dismiss, Some(id)) => {
                if tx.dismiss_note(owner, id, ctx.now_ms)? {
                    Ok(ToolAnswer::ok(format!("dismissed note {id}")))
                } else {
                    Ok(not_found(id))
                }
            }
        }
    });
    result.unwrap_or_else(|error: StoreError| ToolAnswer::store(&error))
}

fn non_blank(text: Option<&str>) -> Option<&str> {
    text.filter(|text| !text.trim().is_empty())
}

fn not_found(id: u64) -> ToolAnswer {
    ToolAnswer::error(format!(
        "no note {id} among yours; action read lists your notes with their ids"
    ))
}

fn listing(notes: &[StoredNote]) -> String {
    if notes.is_empty() {
        return "no open notes".to_owned();
    }
    let mut out = String::new();
    for note in notes {
        match (&note.surface_condition, note.status) {
            (Some(condition), NoteStatus::Pending) => out.push_str(&format!(
                "[{}] smart, pending evaluation (when: {condition}): {}\n",
                note.id, note.content
            )),
            (Some(condition), _) => out.push_str(&format!(
                "[{}] smart, due now (when: {condition}): {}\n",
                note.id, note.content
            )),
            (None, _) => out.push_str(&format!("[{}] {}\n", note.id, note.content)),
        }
    }
    out
}

//! The memories under suspicion and their evidence, as the verifying model reads them.
//!
//! A memory becomes a candidate when the deterministic search found something against it (a
//! file it names is gone, a name it uses appears nowhere, a value it states is not next to
//! its name any more). The model is shown exactly that: the memory, then one line per thing
//! it names with what the search found, and the project lines that mention it, so it judges
//! from the code rather than from its own recollection. The format is line-based and read
//! back by [`read_verify_message`], which is how the simulator plays the model.

use std::fmt::Write as _;

/// The verifying model's instructions.
pub const VERIFY_SYSTEM: &str = "\
You keep a coding project's long-term memory true. Each memory below names files, code \
names or values that a search of the project's current files could not confirm. For each \
one, read the evidence: `file` lines say whether a named file still exists, `name` lines \
whether a named identifier still appears (with the lines where it does), `value` lines \
whether a stated value still appears next to its name. Then decide: `keep` when the memory \
is still true (the search can miss things written differently), `update` with the corrected \
text when the fact still matters but a detail changed (a renamed file, a new value), or \
`archive` with a reason when it is no longer true. Judge only from the evidence; when in \
doubt, keep. Answer only with a call to the judging tool.";

/// Most project lines shown per named thing: enough to see the current state.
const SIGHTINGS_SHOWN: usize = 3;

/// Most characters of one project line shown.
const LINE_CHARS: usize = 160;

/// One project line that mentions a named thing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sighting {
    /// The file, relative to the project root.
    pub path: String,
    /// Its line number, from 1.
    pub line: u32,
    /// The line's text, trimmed.
    pub text: String,
}

/// What the search found about one thing a memory names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Evidence {
    /// A file the memory names.
    File {
        /// The path as the memory wrote it.
        path: String,
        /// Whether it exists in the project (under that path, or ending with it).
        present: bool,
    },
    /// An identifier the memory names.
    Name {
        /// The identifier.
        name: String,
        /// Lines where it appears; empty when it appears nowhere.
        seen_at: Vec<Sighting>,
    },
    /// A value the memory states for a name (`MAX_RETRIES = 5`).
    Value {
        /// The name.
        name: String,
        /// The stated value.
        value: String,
        /// Whether a line holds both the name and the value.
        holds: bool,
        /// Lines where the name appears, so a changed value can be read off them.
        seen_at: Vec<Sighting>,
    },
}

impl Evidence {
    /// Whether this finding speaks against the memory.
    pub fn is_against(&self) -> bool {
        match self {
            Self::File { present, .. } => !present,
            Self::Name { seen_at, .. } => seen_at.is_empty(),
            Self::Value { holds, .. } => !holds,
        }
    }
}

/// A memory to judge and the evidence about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// The memory's store id.
    pub memory_id: u64,
    /// Its category (`CONFIG_VALUES`, ...).
    pub category: String,
    /// What it says.
    pub content: String,
    /// What the search found, in the order the memory names things.
    pub evidence: Vec<Evidence>,
}

const OPENING: &str = "Memories to check against the project's current files, each with what \
a search of the project found:";

/// The user message of a verifying call: every candidate and its evidence.
pub fn verify_user_message(candidates: &[Candidate]) -> String {
    let mut out = String::from(OPENING);
    out.push('\n');
    for candidate in candidates {
        let _ = write!(
            out,
            "\nMemory {} [{}]: {}\n",
            candidate.memory_id,
            one_line(&candidate.category),
            one_line(&candidate.content)
        );
        for evidence in &candidate.evidence {
            write_evidence(&mut out, evidence);
        }
    }
    out
}

fn write_evidence(out: &mut String, evidence: &Evidence) {
    let sightings = match evidence {
        Evidence::File { path, present } => {
            let state = if *present { "present" } else { "gone" };
            let _ = writeln!(out, "- file `{}`: {state}", tick_free(path));
            return;
        }
        Evidence::Name { name, seen_at } => {
            let state = if seen_at.is_empty() {
                "not found"
            } else {
                "found"
            };
            let _ = writeln!(out, "- name `{}`: {state}", tick_free(name));
            seen_at
        }
        Evidence::Value {
            name,
            value,
            holds,
            seen_at,
        } => {
            let state = if *holds { "holds" } else { "not found" };
            let _ = writeln!(
                out,
                "- value `{}` = `{}`: {state}",
                tick_free(name),
                tick_free(value)
            );
            seen_at
        }
    };
    for sighting in sightings.iter().take(SIGHTINGS_SHOWN) {
        let text: String = one_line(&sighting.text).chars().take(LINE_CHARS).collect();
        let _ = writeln!(out, "  {}:{}: {text}", sighting.path, sighting.line);
    }
}

/// Reads back the candidates of a message [`verify_user_message`] wrote (sightings beyond
/// those shown are not in it), or `None` when `message` is not one.
pub fn read_verify_message(message: &str) -> Option<Vec<Candidate>> {
    let mut lines = message.lines();
    if lines.next()? != OPENING {
        return None;
    }
    let mut candidates: Vec<Candidate> = Vec::new();
    for line in lines.filter(|line| !line.is_empty()) {
        if let Some(header) = line.strip_prefix("Memory ") {
            candidates.push(read_header(header)?);
        } else if let Some(sighting) = line.strip_prefix("  ") {
            let seen = read_sighting(sighting)?;
            match candidates.last_mut()?.evidence.last_mut()? {
                Evidence::Name { seen_at, .. } | Evidence::Value { seen_at, .. } => {
                    seen_at.push(seen);
                }
                Evidence::File { .. } => return None,
            }
        } else {
            let evidence = read_evidence(line.strip_prefix("- ")?)?;
            candidates.last_mut()?.evidence.push(evidence);
        }
    }
    Some(candidates)
}

fn read_header(header: &str) -> Option<Candidate> {
    let (id, rest) = header.split_once(" [")?;
    let (category, content) = rest.split_once("]: ")?;
    Some(Candidate {
        memory_id: id.parse().ok()?,
        category: category.to_owned(),
        content: content.to_owned(),
        evidence: Vec::new(),
    })
}

fn read_evidence(line: &str) -> Option<Evidence> {
    let (kind, rest) = line.split_once(" `")?;
    let (first, rest) = rest.split_once('`')?;
    match kind {
        "file" => Some(Evidence::File {
            path: first.to_owned(),
            present: rest == ": present",
        }),
        "name" => Some(Evidence::Name {
            name: first.to_owned(),
            seen_at: Vec::new(),
        }),
        "value" => {
            let (value, state) = rest.strip_prefix(" = `")?.split_once("`: ")?;
            Some(Evidence::Value {
                name: first.to_owned(),
                value: value.to_owned(),
                holds: state == "holds",
                seen_at: Vec::new(),
            })
        }
        _ => None,
    }
}

fn read_sighting(text: &str) -> Option<Sighting> {
    let (path, rest) = text.split_once(':')?;
    let (line, text) = rest
        .split_once(": ")
        .unwrap_or((rest.trim_end_matches(':'), ""));
    Some(Sighting {
        path: path.to_owned(),
        line: line.parse().ok()?,
        text: text.to_owned(),
    })
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Backticks delimit names in the message, so a name cannot carry one.
fn tick_free(text: &str) -> String {
    one_line(text).replace('`', "'")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<Candidate> {
        let line = |path: &str, line, text: &str| Sighting {
            path: path.to_owned(),
            line,
            text: text.to_owned(),
        };
        vec![
            Candidate {
                memory_id: 12,
                category: "CONFIG_VALUES".into(),
                content: "Retries are capped by MAX_RETRIES = 5 in src/net.rs".into(),
                evidence: vec![
                    Evidence::File {
                        path: "src/net.rs".into(),
                        present: true,
                    },
                    Evidence::Value {
                        name: "MAX_RETRIES".into(),
                        value: "5".into(),
                        holds: false,
                        seen_at: vec![line("src/net.rs", 14, "const MAX_RETRIES: u32 = 7;")],
                    },
                ],
            },
            Candidate {
                memory_id: 40,
                category: "ARCHITECTURE".into(),
                content: "Parsing lives in\nsrc/old_parse.rs (parse_legacy)".into(),
                evidence: vec![
                    Evidence::File {
                        path: "src/old_parse.rs".into(),
                        present: false,
                    },
                    Evidence::Name {
                        name: "parse_legacy".into(),
                        seen_at: Vec::new(),
                    },
                ],
            },
        ]
    }

    #[test]
    fn message_snapshot() {
        insta::assert_snapshot!(verify_user_message(&sample()), @r"
        Memories to check against the project's current files, each with what a search of the project found:

        Memory 12 [CONFIG_VALUES]: Retries are capped by MAX_RETRIES = 5 in src/net.rs
        - file `src/net.rs`: present
        - value `MAX_RETRIES` = `5`: not found
          src/net.rs:14: const MAX_RETRIES: u32 = 7;

        Memory 40 [ARCHITECTURE]: Parsing lives in src/old_parse.rs (parse_legacy)
        - file `src/old_parse.rs`: gone
        - name `parse_legacy`: not found
        ");
    }

    #[test]
    fn the_message_reads_back_as_written() {
        let mut expected = sample();
        expected[1].content = one_line(&expected[1].content);
        assert_eq!(
            read_verify_message(&verify_user_message(&sample())),
            Some(expected)
        );
        assert_eq!(read_verify_message("Summarise this transcript."), None);
        let broken = format!("{OPENING}\n- file `a.rs`: gone\n");
        assert_eq!(
            read_verify_message(&broken),
            None,
            "evidence before a memory"
        );
    }

    #[test]
    fn only_unconfirmed_findings_count_against_a_memory() {
        let against: Vec<bool> = sample()
            .iter()
            .flat_map(|candidate| candidate.evidence.iter().map(Evidence::is_against))
            .collect();
        assert_eq!(against, [false, true, true, true]);
    }
}

//! The project `bench dreamer` judges: a generated git repository and 100 memories about
//! it, of which some are planted stale and some are planted restatements, with the truth
//! kept beside them for scoring.
//!
//! The repository has 25 modules of 9 source files, each file a constant and a function
//! with names of its own (`LIMIT_3_4`, `handle_3_4`), and an ignored `target/` folder that
//! still mentions removed functions, so honouring `.gitignore` is part of the test. Of the
//! memories, 65 are true (a constant's value, where a function lives, a plain rule), 20 are
//! stale (5 name a file since renamed, 5 a file deleted, 5 state a constant's old value, 5
//! name a function removed) and 15 restate a true memory in other words.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, bail};

/// Modules in the generated repository.
const MODULES: usize = 25;
/// Source files per module.
const FILES: usize = 9;

/// Plain rules: true memories naming nothing the code can confirm.
const RULES: [&str; 15] = [
    "Commit messages describe the change in the present tense.",
    "Pull requests need one approving review before merging.",
    "Keep public functions documented with a line on why they exist.",
    "Never log request bodies above debug level.",
    "Benchmarks report ratios against a baseline measured in the same run.",
    "Errors name what failed and what the reader should do next.",
    "Configuration defaults live beside the key that reads them.",
    "Integration tests start their own servers on free ports.",
    "Prefer returning early over nested conditionals.",
    "Dependencies are pinned once in the workspace manifest.",
    "Release builds enable thin link-time optimisation.",
    "Snapshots are reviewed by a person before being accepted.",
    "Feature flags are removed within a month of shipping.",
    "Secrets come from the environment, never from files in the repository.",
    "User-facing text is written in plain British English.",
];

/// What a planted memory is, for scoring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// True of the project.
    True,
    /// No longer true: the dreamer should archive or update it.
    Stale,
    /// Restates the true memory at this index: the two should be merged.
    Restates(usize),
}

/// A memory to plant and what it is.
#[derive(Debug, Clone)]
pub struct Planted {
    /// Its text.
    pub content: String,
    /// What it is.
    pub kind: Kind,
}

/// The value of `LIMIT_m_f` in the generated code (distinct per file).
fn value(m: usize, f: usize) -> usize {
    100 + m * FILES + f
}

/// Writes the repository under `root` and commits it.
pub fn write_project(root: &Path) -> anyhow::Result<()> {
    for m in 0..MODULES {
        let folder = root.join(format!("src/mod_{m}"));
        std::fs::create_dir_all(&folder).context("cannot create the bench project")?;
        for f in 0..FILES {
            let code = format!(
                "//! Module {m}, part {f}.\n\npub const LIMIT_{m}_{f}: u32 = {};\n\n\
                 pub fn handle_{m}_{f}(input: u32) -> u32 {{\n    input + LIMIT_{m}_{f}\n}}\n",
                value(m, f)
            );
            std::fs::write(folder.join(format!("file_{f}.rs")), code)?;
        }
    }
    std::fs::create_dir_all(root.join("target/debug"))?;
    let removed: String = (65..70)
        .map(|slot| format!("pub fn retry_{}_{}() {{}}\n", slot / FILES, slot % FILES))
        .collect();
    std::fs::write(root.join("target/debug/old_build.rs"), removed)?;
    std::fs::write(root.join(".gitignore"), "target/\n")?;
    std::fs::write(root.join("README.md"), "# bench project\n")?;
    git(root, &["init", "-q"])?;
    git(root, &["add", "-A"])?;
    git(
        root,
        &[
            "-c",
            "user.name=bench",
            "-c",
            "user.email=bench@localhost",
            "commit",
            "-q",
            "-m",
            "generated",
        ],
    )
}

fn git(root: &Path, args: &[&str]) -> anyhow::Result<()> {
    let status = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(args)
        .status()
        .context("cannot run git (the bench project is a git repository)")?;
    if !status.success() {
        bail!("git {} failed in the bench project", args.join(" "));
    }
    Ok(())
}

/// The 100 memories, in the order they are stored.
pub fn memories() -> Vec<Planted> {
    let at = |slot: usize| (slot / FILES, slot % FILES);
    let mut out = Vec::new();
    let mut push = |content: String, kind: Kind| out.push(Planted { content, kind });
    for slot in 0..25 {
        let (m, f) = at(slot);
        push(
            format!(
                "LIMIT_{m}_{f} is {} in src/mod_{m}/file_{f}.rs",
                value(m, f)
            ),
            Kind::True,
        );
    }
    for slot in 25..50 {
        let (m, f) = at(slot);
        push(
            format!("handle_{m}_{f} lives in src/mod_{m}/file_{f}.rs"),
            Kind::True,
        );
    }
    for rule in RULES {
        push(rule.to_owned(), Kind::True);
    }
    for slot in 50..55 {
        let (m, f) = at(slot);
        push(
            format!("The request parser of module {m} is src/mod_{m}/parser_{f}.rs"),
            Kind::Stale,
        );
    }
    for slot in 55..60 {
        let (m, f) = at(slot);
        push(
            format!("Fixtures for part {f} are generated by src/mod_{m}/fixtures_{f}.rs"),
            Kind::Stale,
        );
    }
    for slot in 60..65 {
        let (m, f) = at(slot);
        push(format!("LIMIT_{m}_{f} is {}", value(m, f) + 1), Kind::Stale);
    }
    for slot in 65..70 {
        let (m, f) = at(slot);
        push(
            format!("Call retry_{m}_{f} after a failed handle"),
            Kind::Stale,
        );
    }
    for (index, slot) in (0..8).enumerate() {
        let (m, f) = at(slot);
        push(
            format!(
                "The value of LIMIT_{m}_{f}, set in src/mod_{m}/file_{f}.rs, is {}",
                value(m, f)
            ),
            Kind::Restates(index),
        );
    }
    for (index, slot) in (25..32).enumerate() {
        let (m, f) = at(slot);
        push(
            format!("The function handle_{m}_{f} is defined in src/mod_{m}/file_{f}.rs"),
            Kind::Restates(25 + index),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_planted_memories_have_the_shape_the_issue_asks_for() {
        let planted = memories();
        let count = |wanted: fn(&Kind) -> bool| planted.iter().filter(|p| wanted(&p.kind)).count();
        assert_eq!(planted.len(), 100);
        assert_eq!(count(|kind| *kind == Kind::Stale), 20);
        assert_eq!(count(|kind| matches!(kind, Kind::Restates(_))), 15);
        for memory in &planted {
            if let Kind::Restates(original) = memory.kind {
                assert_eq!(planted[original].kind, Kind::True, "{}", memory.content);
            }
        }
    }
}

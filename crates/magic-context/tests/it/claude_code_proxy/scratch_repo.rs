//! The scratch git repository the long session works in: three generated Rust files of
//! 16–20 KB and a README, committed once.
//!
//! The script fixture (`tests/fixtures/long_session.json`) depends on these exact bytes: its
//! `when` conditions look for the marker in each file's first line and for function names,
//! and its partial Reads aim at line numbers (the `pub fn` line of function `i` is line
//! `6·i + 8`). Change the generator and the fixture together.

use crate::support::git_repo::commit_all;
use std::path::Path;

/// One generated source file.
struct SourceFile {
    name: &'static str,
    title: &'static str,
    marker: &'static str,
    prefix: &'static str,
    functions: usize,
}

const FILES: [SourceFile; 3] = [
    SourceFile {
        name: "parser",
        title: "Parser steps",
        marker: "MARKER-PARSER",
        prefix: "parse_step",
        functions: 80,
    },
    SourceFile {
        name: "codec",
        title: "Codec rounds",
        marker: "MARKER-CODEC",
        prefix: "encode_round",
        functions: 70,
    },
    SourceFile {
        name: "tables",
        title: "Lookup tables",
        marker: "MARKER-TABLES",
        prefix: "lookup_entry",
        functions: 90,
    },
];

const README: &str = "# long session demo\n\nA scratch repository for the long-session test.\n";

/// Creates `repo` with the generated files and one commit; the repository has its own user
/// identity because the script commits.
pub fn create(repo: &Path) {
    std::fs::create_dir_all(repo.join("src")).unwrap();
    for file in &FILES {
        std::fs::write(repo.join(format!("src/{}.rs", file.name)), render(file)).unwrap();
    }
    std::fs::write(repo.join("README.md"), README).unwrap();
    commit_all(repo);
}

fn render(file: &SourceFile) -> String {
    let SourceFile {
        title,
        marker,
        prefix,
        ..
    } = file;
    let mut text = format!(
        "//! {title}: generated for the long-session end-to-end test ({marker}).\n//!\n\
         //! Each function below is one step; the test reads, greps and edits them.\n\n\
         use crate::state::State;\n"
    );
    for i in 0..file.functions {
        text.push_str(&format!(
            "\n/// Step {i} of {prefix}: folds the input into the running state.\n\
             pub fn {prefix}_{i:04}(state: &mut State, input: u64) -> u64 {{\n    \
             let folded = state.fold(input, {i});\n    \
             state.remember(\"{prefix}_{i:04}\", folded)\n}}\n"
        ));
    }
    text
}

#[test]
fn files_have_the_lines_the_script_aims_at() {
    let parser = render(&FILES[0]);
    let lines: Vec<&str> = parser.lines().collect();
    assert_eq!(
        lines[259],
        "pub fn parse_step_0042(state: &mut State, input: u64) -> u64 {"
    );
    assert_eq!(lines.len(), 485);
    assert_eq!(parser.len(), 17_687);
    let sizes: Vec<usize> = FILES.iter().map(|file| render(file).len()).collect();
    assert_eq!(sizes, [17_687, 15_916, 20_418]);
}

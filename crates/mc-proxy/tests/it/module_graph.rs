//! The modules of the proxy, the agent tools and the dreamer import each other without a
//! circle, so a request's path can be read from the top down: a module that imports another
//! never is imported by it, directly or around a loop.
//!
//! The graph is read from the source: an edge for every `crate::a::b` path, every
//! `super::` path, and every path through a child module (`child::item`), with comments and
//! each file's test module left out. A module and its children count as separate modules,
//! so a child that uses an item of its parent while the parent uses the child is a circle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every module of a crate's `src` (by path, `""` for the crate root) and its source.
fn modules(src: &Path) -> BTreeMap<String, String> {
    let mut found = BTreeMap::new();
    let mut folders = vec![src.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                found.insert(module_name(src, &path), code_of(&path));
            }
        }
    }
    found
}

fn module_name(src: &Path, file: &Path) -> String {
    let relative: PathBuf = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = relative
        .components()
        .map(|part| part.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|last| last == "mod") {
        parts.pop();
    }
    let name = parts.join("::");
    if name == "lib" || name == "main" {
        String::new()
    } else {
        name
    }
}

/// A file's code before its test module.
fn code_of(file: &Path) -> String {
    let text = std::fs::read_to_string(file).unwrap();
    text.split("#[cfg(test)]")
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// Code without its line comments (doc links name modules without importing them).
fn without_comments(code: &str) -> String {
    code.lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The paths written after each occurrence of `prefix` that starts an identifier path; a
/// group (`crate::{a, b::c}`, `crate::x::{y, z}`) gives each of its paths.
fn paths_after(code: &str, prefix: &str) -> Vec<String> {
    let is_path = |c: char| c.is_alphanumeric() || c == '_' || c == ':';
    let mut found = Vec::new();
    for (at, _) in code.match_indices(prefix) {
        if code[..at].chars().next_back().is_some_and(is_path) {
            continue;
        }
        let rest = &code[at + prefix.len()..];
        let end = rest.find(|c: char| !is_path(c)).unwrap_or(rest.len());
        let path = &rest[..end];
        if !rest[end..].starts_with('{') {
            found.push(path.trim_end_matches(':').to_owned());
            continue;
        }
        let group = &rest[end + 1..];
        let mut depth = 0_usize;
        let close = group
            .find(|c: char| {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => return true,
                    '}' => depth -= 1,
                    _ => {}
                }
                false
            })
            .unwrap_or(group.len());
        for item in group[..close].split(',') {
            let item = item.trim_start();
            let item_end = item.find(|c: char| !is_path(c)).unwrap_or(item.len());
            let item = item[..item_end].trim_end_matches(':');
            if !item.is_empty() && item != "self" {
                found.push(format!("{path}{item}"));
            } else if item == "self" {
                found.push(path.trim_end_matches(':').to_owned());
            }
        }
    }
    found
}

/// The longest known module a path begins with.
fn owner(known: &BTreeMap<String, String>, path: &str) -> Option<String> {
    let parts: Vec<&str> = path.split("::").collect();
    (1..=parts.len())
        .rev()
        .map(|len| parts[..len].join("::"))
        .find(|candidate| known.contains_key(candidate))
}

fn parent_of(module: &str) -> String {
    module
        .rsplit_once("::")
        .map_or_else(String::new, |(parent, _)| parent.to_owned())
}

fn join(base: &str, path: &str) -> String {
    if base.is_empty() {
        path.to_owned()
    } else {
        format!("{base}::{path}")
    }
}

fn edges(known: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    let mut graph = BTreeMap::new();
    for (module, code) in known {
        let code = &without_comments(code);
        let mut targets = BTreeSet::new();
        for path in paths_after(code, "crate::") {
            targets.extend(owner(known, &path));
        }
        for path in paths_after(code, "super::") {
            let parent = parent_of(module);
            targets.extend(owner(known, &join(&parent, &path)).or(Some(parent)));
        }
        for (name, _) in code.match_indices("::") {
            let start = code[..name]
                .rfind(|c: char| !(c.is_alphanumeric() || c == '_'))
                .map_or(0, |at| at + 1);
            let ident = &code[start..name];
            let before = code[..start].chars().next_back();
            if ident.is_empty() || before == Some(':') {
                continue;
            }
            let child = join(module, ident);
            if known.contains_key(&child) {
                targets.insert(child);
            }
        }
        targets.remove(module);
        targets.retain(|target| known.contains_key(target));
        graph.insert(module.clone(), targets);
    }
    graph
}

/// A circle of modules, when the graph has one.
fn find_circle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        graph: &BTreeMap<String, BTreeSet<String>>,
        module: &str,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|seen| seen == module) {
            let mut circle = path[at..].to_vec();
            circle.push(module.to_owned());
            return Some(circle);
        }
        if done.contains(module) {
            return None;
        }
        path.push(module.to_owned());
        for next in &graph[module] {
            if let Some(circle) = visit(graph, next, path, done) {
                return Some(circle);
            }
        }
        path.pop();
        done.insert(module.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|module| visit(graph, module, &mut Vec::new(), &mut done))
}

fn crate_src(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(name)
        .join("src")
}

#[test]
fn the_proxy_the_agent_tools_and_the_dreamer_have_no_import_circle() {
    for name in ["mc-proxy", "mc-agent-tools", "mc-dreamer"] {
        let known = modules(&crate_src(name));
        assert!(known.len() > 5, "{name}: its modules were not found");
        let graph = edges(&known);
        assert_eq!(find_circle(&graph), None, "{name}: an import circle");
    }
}

#[test]
fn a_circle_is_found_where_there_is_one() {
    let known: BTreeMap<String, String> = [
        ("", "mod a; mod b; use a::run;"),
        ("a", "use crate::{b::helper, d}; pub fn run() {}"),
        ("b", "use super::a::run; pub fn helper() {}"),
        ("d", "pub fn lone() {}"),
        ("c", "// use crate::a::run;\nfn lone() {}"),
    ]
    .into_iter()
    .map(|(module, code)| (module.to_owned(), code.to_owned()))
    .collect();
    let graph = edges(&known);
    assert_eq!(graph["c"], BTreeSet::new(), "a comment is no import");
    assert_eq!(graph[""], BTreeSet::from(["a".to_owned()]));
    assert_eq!(
        graph["a"],
        BTreeSet::from(["b".to_owned(), "d".to_owned()]),
        "a group names each of its modules"
    );
    let circle = find_circle(&graph).unwrap();
    assert!(
        circle.contains(&"a".to_owned()) && circle.contains(&"b".to_owned()),
        "{circle:?}"
    );
}

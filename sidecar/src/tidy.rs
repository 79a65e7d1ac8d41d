//! Tidy, as tests (rust-analyzer's `tidy.rs` is the model): rules about the source tree that a
//! reviewer should not have to check by eye. Each failure names the file and the rule.
//!
//! - Layers: front doors (`stdio/`, `http/`) use the engine, the engine uses backends, nothing
//!   below imports a front door, and the two doors never import each other.
//! - No two modules import each other, however indirectly (the import graph has no cycle).
//! - Backends are folders of their own: no backend imports a sibling (`cursor/print/` and
//!   `cursor/acp/`) or another agent's folder, and nothing shared at the backend root (nor above
//!   it) imports an agent's folder (`cursor/`).
//! - Processes start only through `backend/process/` (the files of that folder), and never from
//!   tokio's blocking pool (the parent-death signal follows the forking thread): every
//!   `spawn_blocking` is listed with why it starts nothing.
//! - Only the writer touches stdout (`main.rs` prints `--version`/`--help` before serving).
//! - rustfmt's output is the source (`rustfmt.toml` at the workspace root).
//! - Every JSON example in protocol.md deserializes into its Rust type and serializes back to
//!   the same fields, so a renamed field fails here.
//! - A backend's folder is used from outside only through its front (`mod.rs`), its parent
//!   `backend/` and its sibling folders included (an agent's folder uses the shared `acp/`,
//!   `mcp/`, `process/` through theirs); the engine and the doors name no concrete backend at all.
//! - Every Rust module of the workspace opens with a `//!` doc comment.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const SRC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src");

/// Every `.rs` file under `src/`, as (module path, file text). `a/b.rs` and `a/b/mod.rs` are
/// module `a::b`; `lib.rs` and `main.rs` are the root.
fn sources() -> Vec<(Vec<String>, PathBuf, String)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let p = entry.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|e| e == "rs") {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    walk(Path::new(SRC), &mut files);
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let rel = p.strip_prefix(SRC).unwrap();
            let mut segs: Vec<String> = rel.iter().map(|s| s.to_string_lossy().into_owned()).collect();
            let last = segs.pop().unwrap();
            if !matches!(last.as_str(), "mod.rs" | "lib.rs" | "main.rs") {
                segs.push(last.trim_end_matches(".rs").to_string());
            }
            let text = std::fs::read_to_string(&p).unwrap();
            // Named with `/` on every platform: the rules below name files that way (and a
            // Windows path accepts `/` as a separator).
            let name: Vec<String> = rel.iter().map(|s| s.to_string_lossy().into_owned()).collect();
            (segs, PathBuf::from(name.join("/")), text)
        })
        .collect()
}

/// Lines that are code, not comments (doc comments mention paths freely).
fn code_lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines().filter(|l| !l.trim_start().starts_with("//"))
}

/// Code lines of the shipped program: not the `#[cfg(test)]` part at the end of a file, not a
/// test-only file.
fn shipped_lines<'a>(path: &Path, text: &'a str) -> Vec<&'a str> {
    let test_file = path.file_name().is_some_and(|n| n == "tests.rs" || n == "scripted.rs")
        || path.components().any(|c| c.as_os_str() == "tests")
        || path == Path::new("tidy.rs");
    if test_file {
        return Vec::new();
    }
    let end = text.find("#[cfg(test)]").or_else(|| text.find("#[cfg(all(test")).unwrap_or(text.len());
    code_lines(&text[..end]).collect()
}

/// `name!(` as a macro call of its own (not the tail of `eprintln!(`).
fn calls_macro(line: &str, name: &str) -> bool {
    line.match_indices(name).any(|(at, _)| !line[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_'))
}

/// `use` and `pub use` (any visibility, after any attributes on the same line): the rest of the
/// line after `use `, if it is one.
fn use_item_start(line: &str) -> Option<&str> {
    let mut t = line.trim_start();
    while let Some(attr) = t.strip_prefix("#[") {
        t = attr[attr.find(']')? + 1..].trim_start();
    }
    if let Some(r) = t.strip_prefix("pub") {
        let r = if r.starts_with('(') { &r[r.find(')')? + 1..] } else { r };
        t = r.strip_prefix(' ')?;
    }
    t.strip_prefix("use ")
}

/// The paths a `use` tree names, each with the name it binds: `a::{b, c::{self, d as e}, *}` is
/// `a::b` (b), `a::c` (c), `a::c::d` (e) and `a` (*). rustfmt wraps long groups over many lines
/// and may open the tree with a group (`use crate::{a::X, b::Y}`), so a tree is read whole.
fn use_tree_paths(text: &str) -> Vec<(Vec<String>, String)> {
    let mut tokens: Vec<String> = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_alphanumeric() || c == '_' {
            let mut word = String::new();
            while let Some(&c) = chars.peek().filter(|c| c.is_alphanumeric() || **c == '_') {
                word.push(c);
                chars.next();
            }
            tokens.push(word);
        } else if c == ':' {
            chars.next();
            if chars.next_if_eq(&':').is_some() {
                tokens.push("::".into());
            }
        } else {
            chars.next();
            if matches!(c, '{' | '}' | ',' | '*') {
                tokens.push(c.to_string());
            }
        }
    }
    fn tree(tokens: &[String], pos: &mut usize, mut prefix: Vec<String>, out: &mut Vec<(Vec<String>, String)>) {
        loop {
            let Some(tok) = tokens.get(*pos) else { return };
            *pos += 1;
            match tok.as_str() {
                "{" => {
                    while tokens.get(*pos).is_some_and(|t| t != "}") {
                        tree(tokens, pos, prefix.clone(), out);
                        if tokens.get(*pos).is_some_and(|t| t == ",") {
                            *pos += 1;
                        }
                    }
                    *pos += 1;
                    return;
                }
                "*" => return out.push((prefix, "*".into())),
                // A path from the extern prelude (`use ::std::fmt`): nothing of ours follows.
                "::" => continue,
                "}" | "," => return *pos -= 1,
                ident => {
                    let followed = tokens.get(*pos).is_some_and(|t| t == "::");
                    if followed {
                        prefix.push(ident.to_string());
                        *pos += 1;
                        continue;
                    }
                    // A leaf: `self` names the group's own path, anything else is one more step.
                    if ident != "self" || prefix.is_empty() {
                        prefix.push(ident.to_string());
                    }
                    let mut name = prefix.last().cloned().unwrap_or_default();
                    if tokens.get(*pos).is_some_and(|t| t == "as") {
                        name = tokens.get(*pos + 1).cloned().unwrap_or_default();
                        *pos += 2;
                    }
                    return out.push((prefix, name));
                }
            }
        }
    }
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < tokens.len() {
        let before = pos;
        tree(&tokens, &mut pos, Vec::new(), &mut out);
        pos = pos.max(before + 1);
    }
    out
}

/// A path from `crate::`, `super::` or `self::`, seen from module `here`, as a module path from the
/// crate root; `None` for any other path (another crate's).
fn resolve(here: &[String], path: &[String]) -> Option<Vec<String>> {
    if !matches!(path.first().map(String::as_str), Some("crate" | "super" | "self")) {
        return None;
    }
    let mut base: Vec<String> = if path[0] == "crate" { Vec::new() } else { here.to_vec() };
    let mut rest = path;
    while let Some((first, tail)) = rest.split_first() {
        match first.as_str() {
            "crate" | "self" => {}
            "super" => {
                base.pop();
            }
            _ => break,
        }
        rest = tail;
    }
    base.extend(rest.iter().cloned());
    Some(base)
}

/// Text of a file with the module it is in (inline modules, `mod tests {`, count: inside one,
/// `super::` is the file's own module).
type InModule = (Vec<String>, String);

/// The `use` items of a file, each read whole (up to its `;`), and the file's other code lines,
/// each with the module it is in.
fn items(module: &[String], text: &str) -> (Vec<InModule>, Vec<InModule>) {
    let (mut uses, mut other) = (Vec::new(), Vec::new());
    let mut inline: Vec<(String, i32)> = Vec::new();
    let mut depth = 0i32;
    let mut pending: Option<String> = None;
    for line in code_lines(text) {
        let trimmed = line.trim_start();
        let opens_mod = trimmed.trim_start_matches("pub ").strip_prefix("mod ").and_then(|r| r.strip_suffix(" {"));
        depth += line.matches('{').count() as i32 - line.matches('}').count() as i32;
        if let Some(name) = opens_mod {
            inline.push((name.trim().to_string(), depth));
            continue;
        }
        while inline.last().is_some_and(|(_, d)| depth < *d) {
            inline.pop();
        }
        let mut here = module.to_vec();
        here.extend(inline.iter().map(|(n, _)| n.clone()));
        // A comment after a member of a wrapped group is not part of the tree (a `;` or `}` in it
        // would end the item or the group).
        let code = |l: &str| l.split("//").next().unwrap_or("").to_string();
        let Some(item) = pending.take().map(|p| p + " " + &code(line)).or_else(|| use_item_start(line).map(code))
        else {
            other.push((here, line.to_string()));
            continue;
        };
        match item.find(';') {
            Some(end) => {
                // Code after the item on the same line is read as code.
                other.push((here.clone(), item[end + 1..].to_string()));
                uses.push((here, item[..end].to_string()));
            }
            None => pending = Some(item),
        }
    }
    (uses, other)
}

/// The identifiers of a path written out in code, from its start: `a::b::C<T>(` is `a`, `b`, `C`.
fn path_segments(text: &str) -> Vec<String> {
    text.split("::")
        .map(|s| s.split(|c: char| !(c.is_alphanumeric() || c == '_')).next().unwrap_or(""))
        .take_while(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// Where `pattern` starts a path of its own in `line` (not the tail of an identifier or of a longer
/// path, `a::self::`).
fn path_starts<'a>(line: &'a str, pattern: &'a str) -> impl Iterator<Item = &'a str> + 'a {
    line.match_indices(pattern)
        .filter(|(at, _)| !line[..*at].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == ':'))
        .map(|(at, _)| &line[at..])
}

/// Module paths this file's code refers to: every path of every `use` tree; paths written out
/// from `crate::`, `super::` or `self::`; and paths written through a module imported by name
/// (after `use super::acp::{self, …};`, `use super::{acp, print};` or `use crate::backend::process;`,
/// a later `acp::agent::X` reaches `acp::agent`). The file is read once.
fn references(module: &[String], text: &str) -> Vec<Vec<String>> {
    let (uses, other) = items(module, text);
    let mut out = Vec::new();
    let mut aliases: Vec<(String, Vec<String>)> = Vec::new();
    for (here, tree) in &uses {
        for (path, name) in use_tree_paths(tree) {
            let Some(path) = resolve(here, &path) else { continue };
            let is_module =
                !name.is_empty() && name.chars().all(|c| c.is_ascii_lowercase() || c == '_' || c.is_ascii_digit());
            if is_module && !matches!(name.as_str(), "self" | "super" | "crate") {
                aliases.push((name, path.clone()));
            }
            out.push(path);
        }
    }
    for (here, line) in &other {
        for start in ["crate::", "super::", "self::"] {
            out.extend(path_starts(line, start).filter_map(|path| resolve(here, &path_segments(path))));
        }
        for (name, path) in &aliases {
            let pattern = format!("{name}::");
            for written in path_starts(line, &pattern) {
                out.push([path.clone(), path_segments(&written[pattern.len()..])].concat());
            }
        }
    }
    out
}

/// The import graph between source files: file → files whose module it uses. A module's own
/// submodule declarations (`mod x;`) are not imports.
fn import_graph() -> BTreeMap<String, BTreeSet<String>> {
    let files = sources();
    let modules: BTreeMap<Vec<String>, String> =
        files.iter().map(|(m, p, _)| (m.clone(), p.display().to_string())).collect();
    let mut graph = BTreeMap::new();
    for (module, path, text) in &files {
        let name = path.display().to_string();
        if name == "main.rs" || name == "tidy.rs" {
            continue; // main: the binary crate (imports the library by name); tidy: quotes paths
        }
        let mut edges = BTreeSet::new();
        for target in references(module, text) {
            // The longest prefix that is a module of ours.
            let found = (0..=target.len()).rev().find_map(|n| modules.get(&target[..n]));
            if let Some(file) = found {
                if *file != name && !target.is_empty() {
                    edges.insert(file.clone());
                }
            }
        }
        graph.insert(name, edges);
    }
    graph
}

fn layer(file: &str) -> &str {
    match file.split('/').next().unwrap_or(file) {
        "lib.rs" | "main.rs" => "root",
        first => first.trim_end_matches(".rs"),
    }
}

/// Which layers each layer may import (besides its own).
fn allowed(layer: &str) -> &'static [&'static str] {
    // The stdio wire (`protocol`) is known only to the front doors and start-up: the engine and
    // the backends speak in `vocab` terms and their own types (docs/architecture.md).
    const FOUNDATION: &[&str] = &["vocab", "error", "util"];
    match layer {
        "vocab" | "util" | "logging" => &[],
        "error" => &["vocab"],
        "protocol" => &["vocab", "error"],
        "backend" => FOUNDATION,
        "engine" => &["vocab", "error", "util", "backend"],
        "startup" => &["protocol", "vocab", "error", "util", "backend", "engine", "logging"],
        "translate" => &["protocol", "vocab", "error", "util", "backend", "engine"],
        "stdio" | "http" | "doctor" => {
            &["protocol", "vocab", "error", "util", "backend", "engine", "startup", "translate"]
        }
        "root" => &[
            "protocol",
            "vocab",
            "error",
            "util",
            "backend",
            "engine",
            "startup",
            "translate",
            "stdio",
            "http",
            "doctor",
            "logging",
        ],
        other => panic!("tidy does not know the layer of `{other}`: add it to `allowed`"),
    }
}

#[test]
fn layers_point_down_only() {
    let mut wrong = Vec::new();
    for (file, edges) in import_graph() {
        let from = layer(&file);
        for to in edges.iter().map(|t| layer(t)) {
            if to != from && !allowed(from).contains(&to) {
                wrong.push(format!("{file} imports {to}/ ({from}/ may use only {:?})", allowed(from)));
            }
        }
    }
    assert!(wrong.is_empty(), "layering broken:\n{}", wrong.join("\n"));
}

#[test]
fn no_two_modules_import_each_other() {
    let graph = import_graph();
    // Depth-first search for a back edge; report the cycle.
    fn visit<'a>(
        n: &'a str,
        g: &'a BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<&'a str, u8>,
        stack: &mut Vec<&'a str>,
        cycles: &mut Vec<String>,
    ) {
        state.insert(n, 1);
        stack.push(n);
        for m in g.get(n).into_iter().flatten() {
            match state.get(m.as_str()) {
                Some(1) => {
                    let from = stack.iter().position(|s| *s == m).unwrap();
                    cycles.push(format!("{} → {m}", stack[from..].join(" → ")));
                }
                Some(_) => {}
                None => visit(m, g, state, stack, cycles),
            }
        }
        stack.pop();
        state.insert(n, 2);
    }
    let (mut state, mut stack, mut cycles) = (BTreeMap::new(), Vec::new(), Vec::new());
    for n in graph.keys() {
        if !state.contains_key(n.as_str()) {
            visit(n, &graph, &mut state, &mut stack, &mut cycles);
        }
    }
    assert!(cycles.is_empty(), "import cycles:\n{}", cycles.join("\n"));
}

#[test]
fn the_graph_sees_real_imports() {
    // The parser above must find what is plainly there, or the two tests above prove nothing.
    let g = import_graph();
    let has = |from: &str, to: &str| g[from].contains(to);
    assert!(has("engine/turn/mod.rs", "engine/core.rs"));
    assert!(has("stdio/handlers.rs", "engine/mod.rs"));
    assert!(has("backend/cursor/print/run.rs", "util/io.rs"));
    assert!(has("stdio/dispatch.rs", "stdio/outbox.rs"), "grouped `use super::{{…}}` members");
    assert!(has("backend/cursor/locate.rs", "backend/cursor/discovery.rs"), "`use super::discovery::{{self, …}}`");
    assert!(has("backend/cursor/probe.rs", "backend/cursor/acp/mod.rs"), "`use super::{{acp, print}}`: a group first");
    assert_eq!(layer("stdio/handlers.rs"), "stdio");
    assert!(!allowed("engine").contains(&"stdio") && !allowed("backend").contains(&"engine"));
    assert!(!allowed("http").contains(&"stdio") && !allowed("stdio").contains(&"http"));
}

#[test]
fn every_form_of_use_tree_is_read_whole() {
    // Forms rustfmt writes that a line-by-line reading missed (an outside review found them): a
    // tree that opens with a group, a group wrapped over lines, nested groups, `self`, renames.
    let engine = ["engine".to_string(), "core".to_string()];
    let refs =
        |text: &str| -> BTreeSet<String> { references(&engine, text).into_iter().map(|p| p.join("::")).collect() };
    let seen = refs("use crate::{protocol::ChatSendParams, vocab::Mode};\n");
    assert!(seen.contains("protocol::ChatSendParams") && seen.contains("vocab::Mode"), "{seen:?}");
    let seen = refs("use crate::backend::acp::{\n    pool::Pool,\n    quirks::{self, AgentQuirks as Q},\n};\n");
    for want in ["backend::acp::pool::Pool", "backend::acp::quirks", "backend::acp::quirks::AgentQuirks"] {
        assert!(seen.contains(want), "{want} not in {seen:?}");
    }
    let seen = refs("pub(crate) use super::{turn, sessions::*};\nfn f() { let x = crate::util::ids::new(); }\n");
    for want in ["engine::turn", "engine::sessions", "util::ids::new"] {
        assert!(seen.contains(want), "{want} not in {seen:?}");
    }
    assert!(refs("use std::{fmt, io::Write};\nuse ::std::fmt;\n").is_empty(), "another crate's paths are not ours");
    let seen = refs("#[cfg(test)] use crate::{\n    util::ids, // one; of } ours\n    vocab::{self},\n};\n");
    for want in ["util::ids", "vocab"] {
        assert!(seen.contains(want), "{want} not in {seen:?}");
    }
    assert!(!seen.iter().any(|p| p.contains("ours") || p.contains("one")), "a comment is not a member: {seen:?}");
    // A module imported by name (or renamed), then used through it.
    let seen = refs("use super::{\n    turn,\n};\nfn f() { turn::plan::go(); }\n");
    assert!(seen.contains("engine::turn::plan::go"), "{seen:?}");
    let renamed = refs("use crate::backend::cursor::{self as c};\nfn f() { c::print::run::go(); }\n");
    assert!(renamed.contains("backend::cursor::print::run::go"), "`{{self as c}}`: {renamed:?}");
}

/// The backend root's modules that any agent shares: every file at the root but the two below,
/// and these folders.
const BACKEND_SHARED_FOLDERS: &[&str] = &["acp", "mcp", "process"];
/// Files at the backend root that name agents on purpose: the chooser of a front door's backend,
/// and the in-process tier's stand-in for one.
const BACKEND_CHOOSERS: &[&str] = &["select.rs", "scripted.rs"];
/// Files of an agent's folder that compose its backends on purpose (besides its `mod.rs`).
const BACKEND_POLICIES: &[&str] = &["backend/cursor/auto.rs", "backend/cursor/probe.rs"];

/// Where a file sits among the backends. Every folder of `backend/` that is not shared is an
/// agent's (`cursor/`): its own files are what its backends share, and each of its folders is one
/// backend (`cursor/print/`, `cursor/acp/`).
#[derive(Debug, PartialEq)]
enum BackendPlace<'a> {
    /// Not under `backend/`.
    Above,
    Shared,
    Chooser,
    Agent {
        agent: &'a str,
        backend: Option<&'a str>,
    },
}

fn backend_place(file: &str) -> BackendPlace<'_> {
    let Some(rest) = file.strip_prefix("backend/") else { return BackendPlace::Above };
    let parts: Vec<&str> = rest.split('/').collect();
    match parts[..] {
        [name] if BACKEND_CHOOSERS.contains(&name) => BackendPlace::Chooser,
        [_] => BackendPlace::Shared,
        [folder, ..] if BACKEND_SHARED_FOLDERS.contains(&folder.trim_end_matches(".rs")) => BackendPlace::Shared,
        [agent, _] => BackendPlace::Agent { agent, backend: None },
        [agent, backend, ..] => BackendPlace::Agent { agent, backend: Some(backend) },
        [] => unreachable!("split yields at least one part"),
    }
}

/// Why the import `from` → `to` breaks the backends' layout, if it does.
fn backend_import_problem(from: &str, to: &str) -> Option<String> {
    use BackendPlace::*;
    match (backend_place(from), backend_place(to)) {
        (Above | Shared, Agent { agent, .. }) => {
            Some(format!("{from} imports {to}: only the backend root is shared, the {agent}/ agent is not"))
        }
        (Shared, Chooser) => Some(format!("{from} imports {to}: shared modules do not name backends")),
        (Agent { .. }, Chooser) => Some(format!("{from} imports {to}: a backend never picks backends")),
        (Agent { agent: a, .. }, Agent { agent: b, .. }) if a != b => {
            Some(format!("{from} imports {to}: the {a}/ agent imports the {b}/ agent"))
        }
        (Agent { backend: Some(x), .. }, Agent { backend: Some(y), .. }) if x != y => {
            Some(format!("{from} imports {to}: sibling backends {x}/ and {y}/ share only their parent's modules"))
        }
        (Agent { agent, backend: None }, Agent { backend: Some(b), .. })
            if !BACKEND_POLICIES.contains(&from) && from != format!("backend/{agent}/mod.rs") =>
        {
            Some(format!("{from} imports {to}: what an agent's backends share does not use one of them ({b}/)"))
        }
        _ => None,
    }
}

#[test]
fn no_backend_imports_a_sibling_and_nothing_shared_imports_an_agent() {
    let wrong: Vec<String> = import_graph()
        .iter()
        .flat_map(|(from, edges)| edges.iter().filter_map(move |to| backend_import_problem(from, to)))
        .collect();
    assert!(wrong.is_empty(), "backends are folders of their own (docs/architecture.md):\n{}", wrong.join("\n"));
}

#[test]
fn the_backend_rule_catches_each_kind_of_violation() {
    // The rule above must flag what it forbids, or it proves nothing.
    for (from, to) in [
        ("backend/cursor/acp/mod.rs", "backend/cursor/print/spares.rs"),
        ("backend/cursor/print/stream/raw.rs", "backend/cursor/acp/turn.rs"),
        ("backend/gemini/mod.rs", "backend/cursor/cli.rs"),
        ("backend/cursor/acp/agent.rs", "backend/gemini/agent.rs"),
        ("backend/contract.rs", "backend/cursor/known_builds.rs"),
        ("backend/acp/connection.rs", "backend/cursor/failures.rs"),
        ("backend/mcp/host.rs", "backend/cursor/isolation.rs"),
        ("backend/events.rs", "backend/select.rs"),
        ("backend/cursor/cli.rs", "backend/cursor/print/mod.rs"),
        ("backend/cursor/print/mod.rs", "backend/select.rs"),
        ("engine/doctor.rs", "backend/cursor/known_builds.rs"),
    ] {
        assert!(backend_import_problem(from, to).is_some(), "{from} → {to} passes");
    }
    for (from, to) in [
        ("backend/cursor/acp/mod.rs", "backend/cursor/cli.rs"),
        ("backend/cursor/acp/turn.rs", "backend/acp/updates.rs"),
        ("backend/cursor/acp/tools.rs", "backend/mcp/mod.rs"),
        ("backend/cursor/print/run.rs", "backend/cursor/print/stream/mod.rs"),
        ("backend/cursor/auto.rs", "backend/cursor/acp/mod.rs"),
        ("backend/cursor/mod.rs", "backend/cursor/print/mod.rs"),
        ("backend/select.rs", "backend/cursor/mod.rs"),
        ("backend/acp/updates.rs", "backend/events.rs"),
        ("engine/core.rs", "backend/mod.rs"),
    ] {
        assert_eq!(backend_import_problem(from, to), None, "{from} → {to}");
    }
    let g = import_graph();
    assert!(
        g["backend/cursor/acp/mod.rs"].contains("backend/cursor/cli.rs"),
        "the graph sees `super::` into the parent"
    );
}

/// The folder that may start processes: everything in it is the process helper.
const PROCESS_HELPER: &str = "backend/process/";

/// The lines of `name` that start a process other than through the process helper.
fn starts_processes<'a>(name: &str, lines: &[&'a str]) -> Vec<&'a str> {
    if name.starts_with(PROCESS_HELPER) {
        return Vec::new();
    }
    lines
        .iter()
        .copied()
        .filter(|line| {
            line.contains("Command::new") || line.contains("process::Command") || line.contains("std::process::Child")
        })
        .collect()
}

/// PR_SET_PDEATHSIG fires when the forking thread exits, and tokio's blocking pool ends idle
/// threads: a process started inside `spawn_blocking` could be killed mid-turn
/// (`backend/process/mod.rs`). Every `spawn_blocking` in the crate must be one of these, each
/// safe for the reason given.
#[test]
fn no_process_starts_on_a_blocking_pool_thread() {
    let allowed: &[(&str, &str)] = &[
        ("backend/process/sweep.rs", "runtime.spawn_blocking(sweep_orphans)"),
        ("backend/cursor/print/run.rs", "tokio::task::spawn_blocking(process::sweep_orphans)"),
        // CLI discovery probes candidates with `--version` from the blocking pool; each probe
        // is awaited (block_on) before the closure returns, so none outlives the thread.
        ("backend/cursor/locate.rs", "tokio::task::spawn_blocking(move || {"),
        // Removing folders; starts nothing.
        ("http/mod.rs", "spawn_blocking(move || engine.sweep_conversation_folders(FOLDER_GRACE))"),
        // Reading and writing the session file; starts nothing.
        ("engine/session_io.rs", "runtime.spawn_blocking(run)"),
        ("engine/session_io.rs", "tokio::task::spawn_blocking(work)"),
    ];
    let needle = concat!("spawn_", "blocking(");
    let mut unexplained = Vec::new();
    for (_, path, text) in sources() {
        let file = path.display().to_string();
        if file == "tidy.rs" {
            continue; // the list above
        }
        for line in code_lines(&text).map(str::trim) {
            if line.contains(needle) && !allowed.iter().any(|(f, l)| *f == file && line.contains(l)) {
                unexplained.push(format!("{file}: {line}"));
            }
        }
    }
    assert!(unexplained.is_empty(), "spawn_blocking that may start a process:\n{}", unexplained.join("\n"));
}

#[test]
fn processes_start_only_through_the_process_helper() {
    let mut wrong = Vec::new();
    for (_, path, text) in sources() {
        let name = path.display().to_string();
        for line in starts_processes(&name, &shipped_lines(&path, &text)) {
            wrong.push(format!("{name}: `{}`", line.trim()));
        }
    }
    assert!(wrong.is_empty(), "start processes with backend::process::spawn:\n{}", wrong.join("\n"));
}

#[test]
fn the_process_rule_catches_a_process_started_elsewhere() {
    // Any file of the helper's folder may start one; a file anywhere else, or one whose name only
    // begins like the folder's, may not.
    let lines = ["let mut cmd = Command::new(&spec.program);", "use tokio::process::Command;"];
    for name in ["backend/process/mod.rs", "backend/process/start.rs", "backend/process/vfork.rs"] {
        assert!(starts_processes(name, &lines).is_empty(), "{name} is the process helper");
    }
    for name in ["backend/cursor/locate.rs", "backend/processes.rs", "engine/core.rs"] {
        assert_eq!(starts_processes(name, &lines), lines, "{name} passes");
        assert_eq!(starts_processes(name, &["let c: std::process::Child = todo!();"]).len(), 1, "{name}");
    }
    assert!(starts_processes("backend/cursor/locate.rs", &["process::spawn(&spec)?;"]).is_empty());
}

/// std's canonicalize gives Windows paths a `\\?\` prefix, which changes the folder the CLI names
/// a workspace's chats by (docs/platforms.md); dunce's gives the path people and the CLI write.
#[test]
fn paths_are_canonicalised_without_the_windows_verbatim_prefix() {
    let needle = concat!("canonic", "alize(");
    let wrong: Vec<String> = sources()
        .iter()
        .flat_map(|(_, path, text)| {
            text.lines()
                .filter(|l| l.contains(needle) && !l.contains(concat!("dunce::", "canonic")))
                .map(move |l| format!("{}: `{}`", path.display(), l.trim()))
        })
        .collect();
    assert!(wrong.is_empty(), "use dunce::canonicalize:\n{}", wrong.join("\n"));
}

#[test]
fn only_the_writer_touches_stdout() {
    let mut wrong = Vec::new();
    for (_, path, text) in sources() {
        let name = path.display().to_string();
        for line in shipped_lines(&path, &text) {
            let prints = calls_macro(line, "println!(") || calls_macro(line, "print!(") || calls_macro(line, "dbg!(");
            let stdout = line.contains("io::stdout()");
            // main.rs: `--version`/`--help`, and handing stdout to the writer; `serve --help`;
            // `doctor`, a terminal command that never speaks the protocol.
            let allowed = (name == "main.rs" && (prints || stdout))
                || (name == "doctor.rs" && prints)
                || (name == "http/mod.rs" && line.contains("print!(\"{USAGE}\")"));
            if (prints || stdout) && !allowed {
                wrong.push(format!("{name}: `{}`", line.trim()));
            }
        }
    }
    assert!(wrong.is_empty(), "stdout carries protocol frames only (log with tracing):\n{}", wrong.join("\n"));
}

#[test]
fn sources_are_formatted() {
    // The whole workspace (sidecar, xtask, the CLI double, the test client), as `cargo fmt` sees it.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let out = std::process::Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .current_dir(root)
        .args(["fmt", "--all", "--", "--check"])
        .output()
        .expect("cargo fmt runs (rustup component add rustfmt)");
    assert!(
        out.status.success(),
        "run `cargo fmt` (rustfmt.toml):\n{}{}",
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.starts_with("Diff in"))
            .collect::<Vec<_>>()
            .join("\n"),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `want` is contained in `got`: every field of `want` is in `got` with a contained value
/// (serializing fills in defaults the example leaves out; a renamed field is missing).
fn contained(want: &serde_json::Value, got: &serde_json::Value, at: &str, problems: &mut Vec<String>) {
    use serde_json::Value;
    match (want, got) {
        (Value::Object(w), Value::Object(g)) => {
            for (k, v) in w {
                match g.get(k) {
                    Some(gv) => contained(v, gv, &format!("{at}.{k}"), problems),
                    None => problems.push(format!("{at}.{k} is lost (renamed or unknown field?)")),
                }
            }
        }
        (Value::Array(w), Value::Array(g)) if w.len() == g.len() => {
            for (i, (a, b)) in w.iter().zip(g).enumerate() {
                contained(a, b, &format!("{at}[{i}]"), problems);
            }
        }
        (a, b) if a == b => {}
        (a, b) => problems.push(format!("{at}: {a} came back as {b}")),
    }
}

fn round_trip<T: serde::de::DeserializeOwned + serde::Serialize>(
    v: &serde_json::Value,
    what: &str,
    problems: &mut Vec<String>,
) {
    match serde_json::from_value::<T>(v.clone()) {
        Ok(parsed) => contained(v, &serde_json::to_value(&parsed).unwrap(), what, problems),
        Err(e) => problems.push(format!("{what}: does not parse as {}: {e}", std::any::type_name::<T>())),
    }
}

#[test]
fn every_protocol_example_round_trips_through_its_type() {
    use crate::protocol::*;
    let doc = include_str!("../../protocol.md");
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in doc.lines() {
        match (&mut current, line.trim()) {
            (None, "```json") => current = Some(String::new()),
            (Some(block), "```") => {
                blocks.push(std::mem::take(block));
                current = None;
            }
            (Some(block), l) => {
                block.push_str(l);
                block.push('\n');
            }
            _ => {}
        }
    }
    let mut methods_by_id = BTreeMap::new();
    let (mut problems, mut checked) = (Vec::new(), 0);
    for message in blocks.iter().flat_map(|b| b.lines()).filter(|l| !l.trim().is_empty()) {
        let v: serde_json::Value = serde_json::from_str(message).unwrap_or_else(|e| panic!("not JSON: {message}: {e}"));
        let what = message.chars().take(60).collect::<String>();
        let params = v.get("params");
        checked += 1;
        match (v["method"].as_str(), v.get("id")) {
            (Some(method), id) => {
                if let Some(id) = id {
                    methods_by_id.insert(id.to_string(), method.to_string());
                }
                let Some(p) = params else { continue };
                match method {
                    request::INITIALIZE => round_trip::<InitializeParams>(p, &what, &mut problems),
                    request::MODELS_LIST => round_trip::<ModelsListParams>(p, &what, &mut problems),
                    request::CHAT_SEND => round_trip::<ChatSendParams>(p, &what, &mut problems),
                    request::SESSIONS_CLEAR => round_trip::<SessionsClearParams>(p, &what, &mut problems),
                    request::PROBE => round_trip::<ProbeParams>(p, &what, &mut problems),
                    notification::CHAT_DELTA => round_trip::<ChatDelta<'static>>(p, &what, &mut problems),
                    notification::MODELS_CHANGED => round_trip::<ModelsListResult>(p, &what, &mut problems),
                    notification::CANCEL_REQUEST => round_trip::<CancelParams>(p, &what, &mut problems),
                    other => problems.push(format!("{what}: no type known for the params of {other}")),
                }
            }
            (None, Some(id)) => {
                if let Some(data) = v.pointer("/error/data") {
                    round_trip::<ErrorData>(data, &what, &mut problems);
                    continue;
                }
                let method = methods_by_id.get(&id.to_string()).cloned().unwrap_or_default();
                let result = &v["result"];
                match method.as_str() {
                    request::INITIALIZE => round_trip::<InitializeResult>(result, &what, &mut problems),
                    request::MODELS_LIST => round_trip::<ModelsListResult>(result, &what, &mut problems),
                    request::CHAT_SEND => round_trip::<ChatSendResult>(result, &what, &mut problems),
                    request::SESSIONS_LIST => round_trip::<SessionsListResult>(result, &what, &mut problems),
                    request::SESSIONS_CLEAR => round_trip::<SessionsClearResult>(result, &what, &mut problems),
                    request::STATUS => round_trip::<StatusResult>(result, &what, &mut problems),
                    request::DOCTOR => round_trip::<DoctorResult>(result, &what, &mut problems),
                    request::PROBE => round_trip::<ProbeResult>(result, &what, &mut problems),
                    request::SHUTDOWN => assert!(result.is_null()),
                    other => problems.push(format!("{what}: a response to no known request ({other:?})")),
                }
            }
            (None, None) => problems.push(format!("{what}: neither a request, a notification nor a response")),
        }
    }
    assert!(checked >= 20, "only {checked} examples found in protocol.md");
    assert!(problems.is_empty(), "protocol.md examples vs sidecar/src/protocol/:\n{}", problems.join("\n"));
}

#[test]
fn a_renamed_field_fails_the_round_trip() {
    let mut problems = Vec::new();
    let example =
        serde_json::json!({"turnId": "t", "model": "auto", "mode": "ask", "converstionId": "typo", "messages": []});
    round_trip::<crate::protocol::ChatSendParams>(&example, "typo", &mut problems);
    assert_eq!(problems.len(), 1, "{problems:?}");
}

/// The folders below `backend/` a file lies in, innermost last: `backend/cursor/print/stream/raw.rs`
/// → `backend/cursor/print/`, `backend/cursor/print/stream/`. Each is one module whose front is its
/// `mod.rs` (or the `name.rs` beside the folder).
fn backend_folders(file: &str) -> Vec<String> {
    let parts: Vec<&str> = file.split('/').collect();
    if parts.first() != Some(&"backend") {
        return Vec::new();
    }
    (2..parts.len()).map(|n| parts[..n].join("/") + "/").collect()
}

fn is_front(folder: &str, file: &str) -> bool {
    file == format!("{folder}mod.rs") || file == format!("{}.rs", folder.trim_end_matches('/'))
}

/// Edges into a backend folder's internals from outside the folder (docs/architecture.md: a
/// backend's folder "is everything that knows" its agent, and its `mod.rs` is what it offers).
/// The parent module (`backend/`'s own files: `auto.rs`, `select.rs`, …) is held to it like
/// anyone, and so is a sibling folder: an agent's folder uses the shared `acp/`, `mcp/` and
/// `process/` through their fronts too. Only an edge the sibling-backend rule already refuses
/// (`backend_import_problem`) is left to that rule, so it is reported once.
fn reaches_into_a_backend(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let mut wrong = Vec::new();
    for (from, edges) in graph {
        for to in edges {
            for folder in backend_folders(to) {
                if from.starts_with(&folder) || is_front(&folder, to) {
                    continue;
                }
                if backend_import_problem(from, to).is_none() {
                    wrong.push(format!("{from} uses {to}, an internal of {folder}: use what its front offers"));
                }
                break;
            }
        }
    }
    wrong
}

/// Edges from the engine or a front door into an agent's folder: they may know `trait Backend`
/// and what the backend root shares (its files, `acp/`, `mcp/`, `process/`), never a concrete
/// backend (docs/architecture.md, engine: "Must not: … name a concrete backend (that is
/// `backend/select.rs`)").
fn names_a_concrete_backend(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let mut wrong = Vec::new();
    for (from, edges) in graph {
        if !matches!(layer(from), "engine" | "stdio" | "http" | "doctor" | "startup") {
            continue;
        }
        for to in edges.iter().filter(|to| matches!(backend_place(to), BackendPlace::Agent { .. })) {
            if let Some(folder) = backend_folders(to).first() {
                wrong.push(format!(
                    "{from} uses {to}: a concrete backend ({folder}), which only backend/select.rs names"
                ));
            }
        }
    }
    wrong
}

#[test]
fn a_backend_folder_is_used_only_through_its_front() {
    let wrong = reaches_into_a_backend(&import_graph());
    assert!(wrong.is_empty(), "a backend folder's internals used from outside it:\n{}", wrong.join("\n"));
}

#[test]
fn the_engine_and_the_doors_name_no_concrete_backend() {
    let wrong = names_a_concrete_backend(&import_graph());
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_folder_rules_see_what_they_forbid() {
    // The two rules above on a made-up graph: each edge they must refuse, and those they must not.
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("backend/cursor/auto.rs", &["backend/cursor/acp/agent.rs", "backend/cursor/print/mod.rs"][..]),
        ("backend/select.rs", &["backend/process/vfork.rs", "backend/process/mod.rs"][..]),
        // The last edge is between sibling backends: the other rule's to report, not this one's.
        (
            "backend/cursor/acp/turn.rs",
            &["backend/cursor/acp/agent.rs", "backend/cursor/env.rs", "backend/cursor/print/run.rs"][..],
        ),
        ("backend/cursor/print/run.rs", &["backend/cursor/print/stream/raw.rs", "backend/process/mod.rs"][..]),
        ("backend/cursor/print/mod.rs", &["backend/cursor/print/stream/mod.rs"][..]),
        ("backend/scripted.rs", &["backend/cursor/mod.rs", "backend/cursor/isolation.rs"][..]),
        ("engine/turn.rs", &["backend/contract.rs", "backend/mod.rs", "backend/cursor/mod.rs"][..]),
        ("engine/core.rs", &["engine/tools/parked.rs", "backend/process/mod.rs"][..]),
        // A sibling folder's internals: the shared folders' too, through their fronts only.
        ("backend/cursor/env.rs", &["backend/process/vfork.rs", "backend/process/mod.rs"][..]),
        ("backend/cursor/acp/mod.rs", &["backend/acp/pool.rs", "backend/acp/mod.rs", "backend/mcp/mod.rs"][..]),
    ]
    .into_iter()
    .map(|(from, to)| (from.to_string(), to.iter().map(|t| t.to_string()).collect()))
    .collect();
    assert_eq!(
        reaches_into_a_backend(&graph),
        [
            "backend/cursor/acp/mod.rs uses backend/acp/pool.rs, an internal of backend/acp/: use what its front offers",
            "backend/cursor/auto.rs uses backend/cursor/acp/agent.rs, an internal of backend/cursor/acp/: use what its front offers",
            "backend/cursor/env.rs uses backend/process/vfork.rs, an internal of backend/process/: use what its front offers",
            "backend/cursor/print/run.rs uses backend/cursor/print/stream/raw.rs, an internal of backend/cursor/print/stream/: use what its front offers",
            "backend/scripted.rs uses backend/cursor/isolation.rs, an internal of backend/cursor/: use what its front offers",
            "backend/select.rs uses backend/process/vfork.rs, an internal of backend/process/: use what its front offers",
        ]
    );
    assert_eq!(
        names_a_concrete_backend(&graph),
        ["engine/turn.rs uses backend/cursor/mod.rs: a concrete backend (backend/cursor/), which only backend/select.rs names"]
    );
}

/// The Rust sources of the workspace, relative to its root: the sidecar's and every other crate's.
fn workspace_sources() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = entry.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|e| e == "rs") {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    for dir in [
        "sidecar/src",
        "sidecar/tests",
        "sidecar/benches",
        "xtask/src",
        "cli-double/src",
        "cli-double/tests",
        "conformance/src",
        "conformance/tests",
        "fuzz/fuzz_targets",
    ] {
        walk(&root.join(dir), &mut files);
    }
    files.sort();
    files.into_iter().map(|p| p.strip_prefix(root).unwrap().to_path_buf()).collect()
}

/// A module opens with `//!` lines saying what it owns (inner attributes such as `#![cfg]` may
/// come first): the reader of any file learns what it is for before reading code.
fn opens_with_a_doc_comment(text: &str) -> bool {
    text.lines().map(str::trim).find(|l| !l.is_empty() && !l.starts_with("#![")).is_some_and(|l| l.starts_with("//!"))
}

#[test]
fn every_module_says_what_it_is() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let files = workspace_sources();
    assert!(files.len() > 100, "tidy found only {} Rust files", files.len());
    let silent: Vec<String> = files
        .iter()
        .filter(|p| !opens_with_a_doc_comment(&std::fs::read_to_string(root.join(p)).unwrap_or_default()))
        .map(|p| p.display().to_string())
        .collect();
    assert!(silent.is_empty(), "modules without a `//!` doc comment at the top:\n{}", silent.join("\n"));
    assert!(opens_with_a_doc_comment("#![cfg(unix)]\n\n//! What.\nuse x;"));
    assert!(!opens_with_a_doc_comment("use x;\n//! Late."));
    assert!(!opens_with_a_doc_comment("/// An item's doc, not the module's.\nfn f() {}"));
}

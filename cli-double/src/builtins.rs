//! Cursor's own tools when the script's model reaches for them (`{"builtin": {…}}` steps): the
//! permission configuration decides, as the research on client-owned tools reports it. A denied
//! tool ends rejected with "Permission denied: Command blocked by permissions configuration"; an
//! unlisted shell command asks (print mode: `interaction_query`, ACP: `session/request_permission`);
//! other tools run — file edits really write (recent builds edit without asking; `--mode ask` is not
//! enforced, docs/cursor-cli.md §8 "Modes"). Shell commands are never executed by the double.
//!
//! `builtinBypass` is the failure the policy monitor exists for: the tool runs (the file is written)
//! and completes with a result whatever the permissions say.

use std::path::{Path, PathBuf};

use crate::json::{obj, Json};
use crate::permissions::{Action, Config, Decision};
use crate::scenario::{Outcome, ToolSpec};
use crate::tool_script::Builtin;

pub const DENIED: &str = "Permission denied: Command blocked by permissions configuration";

/// What playing a builtin step means.
pub struct Plan {
    pub spec: ToolSpec,
    /// Shell commands nobody allowed: the question goes to the user.
    pub gated: bool,
    /// A file the tool writes before its events are emitted.
    pub write: Option<(PathBuf, String)>,
    /// For the record: `denied`, `asked`, `ran`, `bypassed`.
    pub label: &'static str,
    /// For the record: the path, command, URL or query.
    pub target: String,
}

fn absolute(workspace: &str, path: &str) -> String {
    if Path::new(path).is_absolute() {
        path.to_owned()
    } else {
        format!("{}/{path}", workspace.trim_end_matches('/'))
    }
}

pub fn plan(b: &Builtin, workspace: &str, config: &Config, bypass: bool, force: bool) -> Plan {
    let path = absolute(workspace, b.path.as_deref().unwrap_or("notes.md"));
    let content = b.content.clone().unwrap_or_default();
    let command = b.command.clone().unwrap_or_else(|| "ls".to_owned());
    let url = b.url.clone().unwrap_or_else(|| "https://example.com/".to_owned());
    let query = b.query.clone().unwrap_or_else(|| "cursor cli".to_owned());
    let (kind, args, action, target) = match b.kind.as_str() {
        "edit" => (
            "edit",
            obj([("path", path.as_str().into()), ("streamContent", content.as_str().into())]),
            Action::Write(&path),
            path.clone(),
        ),
        "write" => (
            "write",
            obj([("path", path.as_str().into()), ("fileText", content.as_str().into())]),
            Action::Write(&path),
            path.clone(),
        ),
        "delete" => ("delete", obj([("path", path.as_str().into())]), Action::Write(&path), path.clone()),
        "read" => ("read", obj([("path", path.as_str().into())]), Action::Read(&path), path.clone()),
        "shell" => ("shell", obj([("command", command.as_str().into())]), Action::Shell(&command), command.clone()),
        "webFetch" => ("webFetch", obj([("url", url.as_str().into())]), Action::WebFetch(&url), url.clone()),
        _ => ("webSearch", obj([("searchTerm", query.as_str().into())]), Action::WebSearch(&query), query.clone()),
    };
    let mut spec = ToolSpec { kind: kind.to_owned(), args: Some(args), ..ToolSpec::default() };
    let writes = matches!(kind, "edit" | "write");
    let write = writes.then(|| (PathBuf::from(&path), content.clone()));
    if bypass {
        // It runs: a file that is not there fails the read, as it would for a tool allowed to run.
        if kind == "read" {
            match std::fs::read_to_string(&path) {
                Ok(text) => spec.output = Some(text),
                Err(_) => spec.outcome = Outcome::Failure,
            }
        }
        return Plan { spec, gated: false, write, label: "bypassed", target };
    }
    let decision = config.decide(&action, workspace);
    if decision == Decision::Denied {
        spec.outcome = Outcome::Rejected;
        spec.reason = Some(DENIED.to_owned());
        return Plan { spec, gated: false, write: None, label: "denied", target };
    }
    if kind == "shell" {
        let runs = decision == Decision::Allowed || force || config.approval_mode == "unrestricted";
        return Plan { spec, gated: !runs, write: None, label: if runs { "ran" } else { "asked" }, target };
    }
    if kind == "read" {
        match std::fs::read_to_string(&path) {
            Ok(text) => spec.output = Some(text),
            Err(_) => spec.outcome = Outcome::Failure,
        }
    }
    Plan { spec, gated: false, write, label: "ran", target }
}

/// Writes the file of a tool that edits (best-effort: a failure only shows in the record).
pub fn perform(write: &Option<(PathBuf, String)>) -> bool {
    match write {
        Some((path, content)) => {
            if let Some(parent) = path.parent() {
                let _ = std::fs::create_dir_all(parent);
            }
            std::fs::write(path, content).is_ok()
        }
        None => true,
    }
}

/// The record's `builtins` entry.
pub fn entry(b: &Builtin, p: &Plan, step: usize) -> Json {
    obj([
        ("step", step.into()),
        ("kind", b.kind.as_str().into()),
        ("target", p.target.as_str().into()),
        ("outcome", p.label.into()),
    ])
}

//! Tool calls: default `args` per kind and the `result` union (`success` | `failure` | `error` |
//! `rejected`) with the field names of docs/cursor-cli.md §4.8 and the transcripts. Inner values
//! are invented; only the shapes matter to the sidecar.

use crate::json::{arr, obj, Json};
use crate::scenario::{Outcome, ToolSpec};

/// Reason used when a permission query is auto-rejected (transcript 10).
pub const AUTO_REJECT_REASON: &str = "permission mode does not allow interactive approval";

pub const DEFAULT_FILE: &str = "export const version = 1;\n";

/// `shell` → `shellToolCall`; any other word `w` → `wToolCall`.
pub fn key(kind: &str) -> String {
    format!("{kind}ToolCall")
}

/// The call's args: the kind's defaults with the scenario's args laid over them key by key.
pub fn args(spec: &ToolSpec, workspace: &str, call_id: &str) -> Json {
    let user = spec.args.clone().unwrap_or(Json::Obj(Vec::new()));
    let user_str = |k: &str| user.get(k).and_then(Json::as_str).map(str::to_owned);
    let file = |name: &str| format!("{}/{name}", workspace.trim_end_matches('/'));
    let mut base = match spec.kind.as_str() {
        "shell" => shell_args(&user_str("command").unwrap_or_else(|| "npm test".to_owned()), call_id),
        "read" => obj([("path", file("app.ts").into())]),
        // A new file's edit carries `streamContent` instead of `strReplace`.
        "edit" if user.get("streamContent").is_some() => obj([("path", file("app.ts").into())]),
        "edit" => obj([
            ("path", file("app.ts").into()),
            (
                "strReplace",
                obj([("oldText", "export const version = 1;".into()), ("newText", "export const version = 2;".into())]),
            ),
        ]),
        "ls" => obj([("path", workspace.into()), ("ignore", arr([]))]),
        "grep" => obj([
            ("pattern", "TODO".into()),
            ("path", workspace.into()),
            ("outputMode", "content".into()),
            ("caseInsensitive", false.into()),
        ]),
        "glob" => obj([("globPattern", "**/*.ts".into()), ("targetDirectory", workspace.into())]),
        "write" => {
            obj([("path", file("notes.md").into()), ("fileText", "# Notes\n".into()), ("toolCallId", call_id.into())])
        }
        "delete" => obj([("path", file("old.txt").into())]),
        "mcp" => obj([
            ("name", "filesystem-read_file".into()),
            ("args", obj([("path", "README.md".into())])),
            ("providerIdentifier", "filesystem".into()),
            ("toolName", "read_file".into()),
        ]),
        _ => Json::Obj(Vec::new()),
    };
    base.merge_from(&user);
    base
}

/// Shell args in the 2026.09 shape (transcript 04), derived from the command line.
fn shell_args(command: &str, call_id: &str) -> Json {
    let simple: Vec<&str> = command.split(['&', '|', ';']).map(str::trim).filter(|s| !s.is_empty()).collect();
    let names: Vec<Json> = simple.iter().filter_map(|s| s.split_whitespace().next()).map(|n| n.into()).collect();
    let executable: Vec<Json> = simple
        .iter()
        .filter_map(|s| {
            let mut words = s.split_whitespace();
            let name = words.next()?;
            let args = words.map(|w| obj([("type", "word".into()), ("value", w.into())]));
            Some(obj([("name", name.into()), ("args", arr(args)), ("fullText", (*s).into())]))
        })
        .collect();
    obj([
        ("command", command.into()),
        ("workingDirectory", "".into()),
        ("timeout", 120000u64.into()),
        ("toolCallId", call_id.into()),
        ("simpleCommands", Json::Arr(names)),
        ("hasInputRedirect", command.contains('<').into()),
        ("hasOutputRedirect", command.contains('>').into()),
        (
            "parsingResult",
            obj([
                ("parsingFailed", false.into()),
                ("executableCommands", Json::Arr(executable)),
                ("hasRedirects", (command.contains('<') || command.contains('>')).into()),
                ("hasCommandSubstitution", (command.contains("$(") || command.contains('`')).into()),
            ]),
        ),
        ("fileOutputThresholdBytes", "0".into()),
        ("isBackground", false.into()),
        ("skipApproval", false.into()),
        ("timeoutBehavior", "TIMEOUT_BEHAVIOR_BACKGROUND".into()),
    ])
}

fn str_arg(args: &Json, k: &str) -> String {
    args.get(k).and_then(Json::as_str).unwrap_or_default().to_owned()
}

fn error(message: String) -> Json {
    obj([("error", obj([("message", message.into())]))])
}

pub fn rejected(reason: &str) -> Json {
    obj([("rejected", obj([("reason", reason.into())]))])
}

/// The `result` object for a finished call. `outcome` may differ from `spec.outcome` when a
/// permission query decided it.
pub fn result(spec: &ToolSpec, outcome: Outcome, args: &Json, elapsed_ms: u64) -> Json {
    if let Some(verbatim) = &spec.result {
        return verbatim.clone();
    }
    if outcome == Outcome::Rejected {
        return rejected(spec.reason.as_deref().unwrap_or(AUTO_REJECT_REASON));
    }
    let ok = outcome == Outcome::Success;
    let path = str_arg(args, "path");
    match spec.kind.as_str() {
        "shell" => {
            let command = str_arg(args, "command");
            let body = if ok {
                let stdout = spec.output.clone().unwrap_or_else(|| "ok\n".to_owned());
                obj([
                    ("command", command.into()),
                    ("workingDirectory", "".into()),
                    ("exitCode", 0u64.into()),
                    ("signal", "".into()),
                    ("stdout", stdout.clone().into()),
                    ("stderr", "".into()),
                    ("executionTime", elapsed_ms.into()),
                    ("interleavedOutput", stdout.into()),
                ])
            } else {
                let stdout = spec.output.clone().unwrap_or_else(|| "1 failed\n".to_owned());
                obj([
                    ("command", command.into()),
                    ("exitCode", 1u64.into()),
                    ("signal", "".into()),
                    ("stdout", stdout.into()),
                    ("stderr", "".into()),
                    ("aborted", false.into()),
                ])
            };
            obj([(if ok { "success" } else { "failure" }, body), ("isBackground", false.into())])
        }
        _ if !ok => error(match spec.kind.as_str() {
            "read" | "delete" => format!("File not found: {path}"),
            "edit" => format!("String to replace not found in {path}"),
            "ls" => format!("Directory not found: {path}"),
            _ => format!("{} tool failed", spec.kind),
        }),
        kind => obj([("success", success_body(kind, spec, args))]),
    }
}

fn success_body(kind: &str, spec: &ToolSpec, args: &Json) -> Json {
    let path = str_arg(args, "path");
    match kind {
        "read" => {
            let content = spec.output.clone().unwrap_or_else(|| DEFAULT_FILE.to_owned());
            obj([
                ("content", content.as_str().into()),
                ("isEmpty", content.is_empty().into()),
                ("exceededLimit", false.into()),
                ("totalLines", content.split('\n').count().into()),
                ("fileSize", content.len().into()),
                ("path", path.into()),
            ])
        }
        "edit" => edit_body(args, &path),
        "ls" => obj([(
            "directoryTreeRoot",
            obj([
                ("absPath", path.into()),
                ("childrenDirs", arr([])),
                ("childrenFiles", arr([obj([("name", "a.txt".into())]), obj([("name", "b.txt".into())])])),
                ("childrenWereProcessed", true.into()),
            ]),
        )]),
        "grep" => obj([
            ("pattern", str_arg(args, "pattern").into()),
            ("path", path.clone().into()),
            ("outputMode", "content".into()),
            (
                "workspaceResults",
                Json::Obj(vec![(
                    path,
                    obj([(
                        "content",
                        obj([
                            (
                                "matches",
                                arr([obj([
                                    ("file", "app.ts".into()),
                                    (
                                        "matches",
                                        arr([obj([
                                            ("lineNumber", 1u64.into()),
                                            ("content", "// TODO: bump version".into()),
                                        ])]),
                                    ),
                                ])]),
                            ),
                            ("totalLines", 1u64.into()),
                            ("totalMatchedLines", 1u64.into()),
                        ]),
                    )]),
                )]),
            ),
        ]),
        "glob" => {
            let dir = str_arg(args, "targetDirectory");
            obj([
                ("pattern", str_arg(args, "globPattern").into()),
                ("path", dir.clone().into()),
                ("files", arr([format!("{}/app.ts", dir.trim_end_matches('/')).into()])),
                ("totalFiles", 1u64.into()),
                ("clientTruncated", false.into()),
                ("ripgrepTruncated", false.into()),
            ])
        }
        "write" => {
            let text = args.get("fileText").or_else(|| args.get("contents")).and_then(Json::as_str).unwrap_or("");
            obj([("path", path.into()), ("linesCreated", text.lines().count().into()), ("fileSize", text.len().into())])
        }
        "delete" => obj([("path", path.into())]),
        "mcp" => obj([
            (
                "content",
                arr([obj([("text", obj([("text", spec.output.clone().unwrap_or_else(|| "ok".to_owned()).into())]))])]),
            ),
            ("isError", false.into()),
        ]),
        // Kinds without a known result shape (todo, webFetch, ...): an empty success body.
        _ => Json::Obj(Vec::new()),
    }
}

/// Edit results with a unified diff, for `strReplace` (transcript 04) or `streamContent` (new file).
fn edit_body(args: &Json, path: &str) -> Json {
    let (before, after, diff, added, removed) = if let Some(content) = args.get("streamContent").and_then(Json::as_str)
    {
        let lines: Vec<&str> = content.lines().collect();
        let mut diff = format!("--- /dev/null\n+++ b{path}\n@@ -0,0 +1,{} @@", lines.len());
        for l in &lines {
            diff.push_str("\n+");
            diff.push_str(l);
        }
        (String::new(), content.to_owned(), diff, lines.len(), 0)
    } else {
        let sr = args.get("strReplace");
        let old = sr.and_then(|s| s.get("oldText")).and_then(Json::as_str).unwrap_or("");
        let new = sr.and_then(|s| s.get("newText")).and_then(Json::as_str).unwrap_or("");
        let diff = format!("--- a{path}\n+++ b{path}\n@@ -1 +1 @@\n-{old}\n+{new}");
        (format!("{old}\n"), format!("{new}\n"), diff, new.lines().count().max(1), old.lines().count().max(1))
    };
    obj([
        ("path", path.into()),
        ("linesAdded", added.into()),
        ("linesRemoved", removed.into()),
        ("diffString", diff.into()),
        ("beforeFullFileContent", before.into()),
        ("afterFullFileContent", after.into()),
        ("message", format!("Wrote contents to {path}").into()),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The npm-test shell call of transcript 04, args and success result.
    #[test]
    fn shell_matches_transcript_04() {
        let id = "call_Rt5yU8iO1pA4sD7fG0hJ3kLz\nfc_0d2609f619ccdca801698ca0b1f2e3d4c5b6a7980112233445";
        let spec = ToolSpec { kind: "shell".into(), ..ToolSpec::default() };
        let a = args(&spec, "/home/dev/project", id);
        assert_eq!(
            a.to_compact(),
            r#"{"command":"npm test","workingDirectory":"","timeout":120000,"toolCallId":"call_Rt5yU8iO1pA4sD7fG0hJ3kLz\nfc_0d2609f619ccdca801698ca0b1f2e3d4c5b6a7980112233445","simpleCommands":["npm"],"hasInputRedirect":false,"hasOutputRedirect":false,"parsingResult":{"parsingFailed":false,"executableCommands":[{"name":"npm","args":[{"type":"word","value":"test"}],"fullText":"npm test"}],"hasRedirects":false,"hasCommandSubstitution":false},"fileOutputThresholdBytes":"0","isBackground":false,"skipApproval":false,"timeoutBehavior":"TIMEOUT_BEHAVIOR_BACKGROUND"}"#
        );
        let r = result(&spec, Outcome::Success, &a, 1811);
        assert!(r
            .to_compact()
            .starts_with(r#"{"success":{"command":"npm test","workingDirectory":"","exitCode":0,"signal":"","#));
        assert!(r.to_compact().ends_with(r#""executionTime":1811,"interleavedOutput":"ok\n"},"isBackground":false}"#));
    }

    #[test]
    fn edit_matches_transcript_04() {
        let spec = ToolSpec { kind: "edit".into(), ..ToolSpec::default() };
        let a = args(&spec, "/home/dev/project", "x");
        let r = result(&spec, Outcome::Success, &a, 1);
        assert_eq!(
            r.to_compact(),
            r#"{"success":{"path":"/home/dev/project/app.ts","linesAdded":1,"linesRemoved":1,"diffString":"--- a/home/dev/project/app.ts\n+++ b/home/dev/project/app.ts\n@@ -1 +1 @@\n-export const version = 1;\n+export const version = 2;","beforeFullFileContent":"export const version = 1;\n","afterFullFileContent":"export const version = 2;\n","message":"Wrote contents to /home/dev/project/app.ts"}}"#
        );
    }

    #[test]
    fn user_args_override_defaults() {
        let spec = ToolSpec {
            kind: "read".into(),
            args: Some(Json::parse(r#"{"path":"/x/y.rs","limit":10}"#).unwrap()),
            outcome: Outcome::Failure,
            ..ToolSpec::default()
        };
        let a = args(&spec, "/w", "id");
        assert_eq!(a.to_compact(), r#"{"path":"/x/y.rs","limit":10}"#);
        assert_eq!(
            result(&spec, Outcome::Failure, &a, 1).to_compact(),
            r#"{"error":{"message":"File not found: /x/y.rs"}}"#
        );
    }
}

//! Cursor's tool permissions as the CLI reads them (docs/cursor-cli.md §8 "Tool permissions"; the
//! entry forms of the client-tools research): `<workspace>/.cursor/cli.json` (permissions only — any
//! other top-level key makes the CLI reject the whole file) and the user config
//! `$CURSOR_CONFIG_DIR/cli-config.json`, else `$HOME/.cursor/cli-config.json` (`permissions`,
//! `approvalMode`; unknown keys there are ignored).
//!
//! Entries are `Shell(cmd)` / `Shell(cmd:args)`, `Read(glob)`, `Write(glob)`, `WebFetch(domain)`,
//! `WebSearch(query)`, `Mcp(server:tool)`, with `*` wildcards (`**` across `/` in paths). Deny
//! wins over allow. How the real CLI matches a shell command against an entry is not documented:
//! here an entry matches the command's first word or the whole command, and a compound command
//! (`a && b`, `a | b`, `a; b`) is denied if any part is, allowed only if every part is (*invented*).

use std::path::{Path, PathBuf};

use crate::json::Json;
use crate::settings;

/// What the configuration says about one action.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    Denied,
    Allowed,
    /// Neither list names it: the approval mode decides (ask, or run).
    Unlisted,
}

/// An action a tool wants to take.
#[derive(Clone, Debug)]
pub enum Action<'a> {
    Shell(&'a str),
    /// An absolute path.
    Read(&'a str),
    Write(&'a str),
    /// A URL (its host is matched).
    WebFetch(&'a str),
    WebSearch(&'a str),
    Mcp(&'a str, &'a str),
}

#[derive(Clone, Debug, Default)]
pub struct Config {
    pub allow: Vec<String>,
    pub deny: Vec<String>,
    /// `allowlist` (the default), `auto-review` or `unrestricted`.
    pub approval_mode: String,
}

pub fn project_file(workspace: &str) -> PathBuf {
    Path::new(workspace).join(".cursor").join("cli.json")
}

/// The user config file: `$CURSOR_CONFIG_DIR/cli-config.json`, else `$HOME/.cursor/cli-config.json`.
pub fn user_file() -> Option<PathBuf> {
    settings::non_empty("CURSOR_CONFIG_DIR")
        .map(|d| PathBuf::from(d).join("cli-config.json"))
        .or_else(|| settings::non_empty("HOME").map(|h| PathBuf::from(h).join(".cursor").join("cli-config.json")))
}

/// Why `<workspace>/.cursor/cli.json` is rejected, if it is (*invented* text and schema; a report
/// says only "a schema error" and exit 1). `forced`: the `CURSOR_DOUBLE_ACP_START_FAIL=cli-json`
/// knob, whatever the file says.
pub fn project_error(workspace: &str, forced: bool) -> Option<String> {
    let path = project_file(workspace);
    let head = format!("Error: Invalid project configuration in {}", path.display());
    if forced {
        return Some(format!("{head}\n  Unrecognized key(s) in object: 'model'"));
    }
    let text = std::fs::read_to_string(&path).ok()?;
    let value = match Json::parse(&text) {
        Ok(v) => v,
        Err(e) => return Some(format!("{head}\n  {e}")),
    };
    let Some(pairs) = value.as_object() else {
        return Some(format!("{head}\n  Expected object, received {}", kind_of(&value)));
    };
    let unknown: Vec<String> =
        pairs.iter().map(|(k, _)| k).filter(|k| k.as_str() != "permissions").map(|k| format!("'{k}'")).collect();
    (!unknown.is_empty()).then(|| format!("{head}\n  Unrecognized key(s) in object: {}", unknown.join(", ")))
}

fn kind_of(v: &Json) -> &'static str {
    match v {
        Json::Null => "null",
        Json::Bool(_) => "boolean",
        Json::Num(_) => "number",
        Json::Str(_) => "string",
        Json::Arr(_) => "array",
        Json::Obj(_) => "object",
    }
}

fn read_json(path: &Path) -> Option<Json> {
    Json::parse(&std::fs::read_to_string(path).ok()?).ok()
}

fn strings(v: Option<&Json>) -> Vec<String> {
    match v {
        Some(Json::Arr(items)) => items.iter().filter_map(Json::as_str).map(str::to_owned).collect(),
        _ => Vec::new(),
    }
}

/// Both files merged (entries of both lists count). A project file that [`project_error`] rejects
/// contributes nothing; callers check it first.
pub fn load(workspace: &str) -> Config {
    let mut c = Config { approval_mode: "allowlist".to_owned(), ..Config::default() };
    let user = user_file().and_then(|p| read_json(&p));
    let project = if project_error(workspace, false).is_none() { read_json(&project_file(workspace)) } else { None };
    for file in [&user, &project].into_iter().flatten() {
        let perms = file.get("permissions");
        c.allow.extend(strings(perms.and_then(|p| p.get("allow"))));
        c.deny.extend(strings(perms.and_then(|p| p.get("deny"))));
    }
    if let Some(mode) = user.as_ref().and_then(|u| u.get("approvalMode")).and_then(Json::as_str) {
        c.approval_mode = mode.to_owned();
    }
    c
}

impl Config {
    pub fn decide(&self, action: &Action, workspace: &str) -> Decision {
        if let Action::Shell(command) = action {
            let parts = simple_commands(command);
            let each: Vec<Decision> = parts.iter().map(|p| self.decide_one(&Action::Shell(p), workspace)).collect();
            if each.contains(&Decision::Denied) {
                return Decision::Denied;
            }
            return if !each.is_empty() && each.iter().all(|d| *d == Decision::Allowed) {
                Decision::Allowed
            } else {
                Decision::Unlisted
            };
        }
        self.decide_one(action, workspace)
    }

    fn decide_one(&self, action: &Action, workspace: &str) -> Decision {
        let hits = |list: &[String]| list.iter().any(|e| entry_matches(e, action, workspace));
        if hits(&self.deny) {
            Decision::Denied
        } else if hits(&self.allow) {
            Decision::Allowed
        } else {
            Decision::Unlisted
        }
    }
}

fn simple_commands(command: &str) -> Vec<&str> {
    command.split(['&', '|', ';']).map(str::trim).filter(|s| !s.is_empty()).collect()
}

/// `Kind(arg)` → (kind, arg).
fn parse_entry(entry: &str) -> Option<(&str, &str)> {
    let open = entry.find('(')?;
    let inner = entry[open + 1..].strip_suffix(')')?;
    Some((entry[..open].trim(), inner.trim()))
}

fn entry_matches(entry: &str, action: &Action, workspace: &str) -> bool {
    let Some((kind, arg)) = parse_entry(entry) else {
        return false; // unknown entries are ignored
    };
    match (kind, action) {
        ("Shell", Action::Shell(command)) => shell_matches(arg, command),
        ("Read", Action::Read(path)) | ("Write", Action::Write(path)) => path_matches(arg, path, workspace),
        ("WebFetch", Action::WebFetch(url)) => glob(arg, host_of(url), None),
        ("WebSearch", Action::WebSearch(query)) => glob(arg, query, None),
        ("Mcp", Action::Mcp(server, tool)) => {
            let (s, t) = arg.split_once(':').unwrap_or((arg, "*"));
            glob(s, server, None) && glob(t, tool, None)
        }
        _ => false,
    }
}

fn shell_matches(pattern: &str, command: &str) -> bool {
    let command = command.trim();
    let (first, rest) = command.split_once(char::is_whitespace).unwrap_or((command, ""));
    match pattern.split_once(':') {
        Some((cmd, args)) => glob(cmd, first, None) && glob(args, rest.trim(), None),
        None => glob(pattern, first, None) || glob(pattern, command, None),
    }
}

fn path_matches(pattern: &str, path: &str, workspace: &str) -> bool {
    let home = settings::non_empty("HOME").unwrap_or_default();
    if let Some(rest) = pattern.strip_prefix("~/") {
        return glob(&format!("{}/{rest}", home.trim_end_matches('/')), path, Some('/'));
    }
    if pattern.starts_with('/') {
        return glob(pattern, path, Some('/'));
    }
    let ws = workspace.trim_end_matches('/');
    match path.strip_prefix(ws).and_then(|r| r.strip_prefix('/')) {
        Some(relative) => glob(pattern.trim_start_matches("./"), relative, Some('/')),
        None => false,
    }
}

fn host_of(url: &str) -> &str {
    let after = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = after.split(['/', '?', '#']).next().unwrap_or("");
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    host.split(':').next().unwrap_or(host)
}

/// `*` matches any run (not crossing `sep` when one is given), `**` any run at all, `?` one char.
pub fn glob(pattern: &str, text: &str, sep: Option<char>) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    fn go(p: &[char], t: &[char], sep: Option<char>) -> bool {
        match p.first() {
            None => t.is_empty(),
            Some('*') => {
                let double = p.get(1) == Some(&'*');
                let rest = if double { &p[2..] } else { &p[1..] };
                // `**/` also matches nothing at all (`**/a` matches `a`).
                if double && rest.first() == Some(&'/') && go(&rest[1..], t, sep) {
                    return true;
                }
                for i in 0..=t.len() {
                    if go(rest, &t[i..], sep) {
                        return true;
                    }
                    if i < t.len() && !double && Some(t[i]) == sep {
                        return false;
                    }
                }
                false
            }
            Some('?') => !t.is_empty() && Some(t[0]) != sep && go(&p[1..], &t[1..], sep),
            Some(c) => t.first() == Some(c) && go(&p[1..], &t[1..], sep),
        }
    }
    go(&p, &t, sep)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(allow: &[&str], deny: &[&str]) -> Config {
        Config {
            allow: allow.iter().map(|s| (*s).to_owned()).collect(),
            deny: deny.iter().map(|s| (*s).to_owned()).collect(),
            approval_mode: "allowlist".to_owned(),
        }
    }

    #[test]
    fn entries_match_each_kind_and_deny_wins() {
        use Decision::*;
        let ws = "/w";
        let c = config(
            &["Shell(ls)", "Shell(git:status*)", "Read(src/**)", "Mcp(cb:*)", "WebFetch(*.example.com)", "Mcp(x:*)"],
            &["Shell(rm)", "Write(**)", "Write(/**)", "Mcp(x:danger)", "WebSearch(*)"],
        );
        let cases: [(Action, Decision); 14] = [
            (Action::Shell("ls -la"), Allowed),
            (Action::Shell("git status --short"), Allowed),
            (Action::Shell("git push"), Unlisted),
            (Action::Shell("ls && rm -rf /"), Denied),
            (Action::Shell("ls | ls"), Allowed),
            (Action::Read("/w/src/a/b.rs"), Allowed),
            (Action::Read("/w/README.md"), Unlisted),
            (Action::Write("/w/x.txt"), Denied),
            (Action::Write("/etc/passwd"), Denied),
            (Action::Mcp("cb", "create_file"), Allowed),
            (Action::Mcp("x", "danger"), Denied),
            (Action::Mcp("other", "t"), Unlisted),
            (Action::WebFetch("https://docs.example.com/a?b"), Allowed),
            (Action::WebSearch("anything"), Denied),
        ];
        for (action, want) in cases {
            assert_eq!(c.decide(&action, ws), want, "{action:?}");
        }
    }

    #[test]
    fn globs() {
        assert!(glob("*", "", None));
        assert!(glob("src/*.rs", "src/a.rs", Some('/')));
        assert!(!glob("src/*.rs", "src/x/a.rs", Some('/')));
        assert!(glob("src/**/*.rs", "src/a.rs", Some('/')));
        assert!(glob("src/**", "src/x/a.rs", Some('/')));
        assert!(glob("a?c", "abc", None) && !glob("a?c", "ac", None));
    }
}

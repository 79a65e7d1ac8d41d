//! The project approval gate some builds put session MCP servers through (the `gated` knob): a
//! server is connected only when
//! `${CURSOR_DATA_DIR:-$HOME/.cursor}/projects/<slug>/mcp-approvals.json` — a JSON array of
//! strings — holds its key `"<name>-<first 16 hex of sha256(JSON.stringify({path, server}))>"`,
//! where `path` is the project root (the nearest folder at or above the session's cwd that has a
//! `.git`, else the cwd, as given) and the slug is that path with each run of non-alphanumerics
//! turned into `-`, trimmed. The research has this formula from tests of another project, for
//! stdio servers (`server` = `{command, args, env:{}}`); how an HTTP server's `server` object
//! looks is not known, so the double uses the `mcp.json` form `{"url", "headers":{name: value}}`
//! (*invented*).

use std::path::{Path, PathBuf};

use super::client::Entry;
use crate::chats;
use crate::json::{obj, Json};

pub fn slug(path: &str) -> String {
    let mut slug = String::new();
    for c in path.chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c);
        } else if !slug.ends_with('-') {
            slug.push('-');
        }
    }
    slug.trim_matches('-').to_owned()
}

/// The nearest folder at or above `cwd` with a `.git` entry, else `cwd`.
pub fn project_root(cwd: &str) -> String {
    let mut dir = Some(Path::new(cwd));
    while let Some(d) = dir {
        if d.join(".git").exists() {
            return d.to_string_lossy().into_owned();
        }
        dir = d.parent();
    }
    cwd.to_owned()
}

pub fn key(entry: &Entry, root: &str) -> String {
    let headers = Json::Obj(entry.headers.iter().map(|(k, v)| (k.clone(), Json::from(v.as_str()))).collect());
    let server = obj([("url", entry.url.as_str().into()), ("headers", headers)]);
    let hashed = obj([("path", root.into()), ("server", server)]).to_compact();
    let digest = crate::sha256::hex_digest(hashed.as_bytes());
    format!("{}-{}", entry.name, &digest[..16])
}

pub fn file(root: &str) -> Option<PathBuf> {
    Some(chats::data_root()?.join("projects").join(slug(root)).join("mcp-approvals.json"))
}

/// (approved, the key looked for, the file looked in).
pub fn check(entry: &Entry, cwd: &str) -> (bool, String, Option<PathBuf>) {
    let root = project_root(cwd);
    let key = key(entry, &root);
    let path = file(&root);
    let listed = path
        .as_ref()
        .and_then(|p| std::fs::read_to_string(p).ok())
        .and_then(|t| Json::parse(&t).ok())
        .is_some_and(|v| matches!(&v, Json::Arr(items) if items.iter().any(|i| i.as_str() == Some(key.as_str()))));
    (listed, key, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slug_and_key() {
        assert_eq!(slug("/home/u/my proj/"), "home-u-my-proj");
        let e = Entry {
            kind: "http".into(),
            name: "cb".into(),
            url: "http://127.0.0.1:1/mcp/x".into(),
            headers: vec![("Authorization".into(), "Bearer t".into())],
        };
        let k = key(&e, "/w");
        // sha256 of {"path":"/w","server":{"url":"http://127.0.0.1:1/mcp/x","headers":{"Authorization":"Bearer t"}}}
        let expected = crate::sha256::hex_digest(
            br#"{"path":"/w","server":{"url":"http://127.0.0.1:1/mcp/x","headers":{"Authorization":"Bearer t"}}}"#,
        );
        assert_eq!(k, format!("cb-{}", &expected[..16]));
    }
}

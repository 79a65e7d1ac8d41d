//! The README's client configurations, read the way the tests that exercise them read them: a
//! snippet is the fenced block right after a `<!-- snippet: NAME -->` line, so the text a person
//! copies is the text a test ran. Every snippet must be read by a test
//! (`every_readme_snippet_is_exercised_by_a_test`).

use std::path::{Path, PathBuf};

/// The workspace's README.
pub fn readme_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md")
}

/// The snippets of `text` by name, in order.
pub fn snippets(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let Some(name) = line.trim().strip_prefix("<!-- snippet:").and_then(|r| r.strip_suffix("-->")) else {
            continue;
        };
        let fence = lines.next().unwrap_or_default();
        assert!(fence.starts_with("```"), "README: the snippet {name:?} is not followed by a fenced block");
        let body: Vec<&str> = lines.by_ref().take_while(|l| !l.starts_with("```")).collect();
        out.push((name.trim().to_owned(), body.join("\n") + "\n"));
    }
    out
}

/// The README's snippet `name`, with its example address (`127.0.0.1:9997`) replaced by `address`
/// (`host:port` of the server the test started).
pub fn readme_snippet(name: &str, address: &str) -> String {
    let text = std::fs::read_to_string(readme_path()).expect("README.md");
    let (_, body) = snippets(&text)
        .into_iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("README.md has no `<!-- snippet: {name} -->`"));
    body.replace("127.0.0.1:9997", address)
}

/// The environment a shell snippet sets: the `NAME=value` words that open each command (lines
/// continued with `\` are one), in order. A value written `<…>` is a placeholder for the person
/// to fill in, kept as it is (the test puts its own value in).
pub fn shell_env(snippet: &str) -> Vec<(String, String)> {
    let joined = snippet.replace("\\\n", " ");
    let mut out = Vec::new();
    for line in joined.lines() {
        let mut rest = line.trim_start().strip_prefix("export ").unwrap_or(line.trim_start());
        while let Some(eq) = rest.find('=') {
            let name = &rest[..eq];
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_') {
                break;
            }
            let after = &rest[eq + 1..];
            let end = if after.starts_with('<') {
                after.find('>').map_or(after.len(), |i| i + 1)
            } else {
                after.find(char::is_whitespace).unwrap_or(after.len())
            };
            out.push((name.to_owned(), after[..end].to_owned()));
            rest = after[end..].trim_start();
        }
    }
    out
}

/// The command a one-command shell snippet runs: its words after the `NAME=value` ones that open
/// it (lines continued with `\` are one), split at whitespace (the snippets quote nothing).
pub fn shell_command(snippet: &str) -> Vec<String> {
    let joined = snippet.replace("\\\n", " ");
    let mut rest = joined.trim();
    for (name, value) in shell_env(snippet) {
        rest = rest.trim_start().strip_prefix("export ").unwrap_or(rest.trim_start());
        rest = rest.strip_prefix(&format!("{name}={value}")).unwrap_or(rest);
    }
    rest.split_whitespace().map(str::to_owned).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shell_snippet_says_its_environment() {
        let snippet = "cursor-bridge serve --model opus-5\nA=http://x:1 B=<a key, or anything> \\\n  C=1 claude --flag X=no\nexport D=2\n";
        let want = [("A", "http://x:1"), ("B", "<a key, or anything>"), ("C", "1"), ("D", "2")];
        assert_eq!(shell_env(snippet), want.map(|(k, v)| (k.to_owned(), v.to_owned())));
    }

    #[test]
    fn a_shell_snippet_says_its_command() {
        let snippet = "A=http://x:1 B=<a key, or anything> \\\n  aider --model openai/auto\n";
        assert_eq!(shell_command(snippet), ["aider", "--model", "openai/auto"]);
    }

    /// The sources of the workspace's tests, where `readme_snippet("NAME"` calls are looked for.
    fn test_sources() -> String {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut out = String::new();
        let mut dirs = vec![root.join("sidecar/tests"), root.join("conformance/tests")];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    out.push_str(&std::fs::read_to_string(&path).unwrap_or_default());
                }
            }
        }
        out
    }

    #[test]
    fn every_readme_snippet_is_exercised_by_a_test() {
        let text = std::fs::read_to_string(readme_path()).unwrap();
        let found = snippets(&text);
        assert!(found.len() >= 6, "only {} snippets in README.md", found.len());
        let sources = test_sources();
        let unused: Vec<&str> = found
            .iter()
            .map(|(n, _)| n.as_str())
            .filter(|n| !sources.contains(&format!("readme_snippet(\"{n}\"")))
            .collect();
        assert!(unused.is_empty(), "README snippets no test runs: {unused:?}");
    }

    #[test]
    fn a_snippet_is_the_block_after_its_marker() {
        let text = "intro\n<!-- snippet: a -->\n```toml\nx = 1\nurl = \"http://127.0.0.1:9997/v1\"\n```\nafter\n";
        assert_eq!(snippets(text), vec![("a".to_owned(), "x = 1\nurl = \"http://127.0.0.1:9997/v1\"\n".to_owned())]);
    }
}

//! `protocol.md` and `sidecar/src/protocol/` must describe the same protocol: every method and notification
//! has a `### \`name\`` section, every delta kind and error kind is in a table, and nothing is
//! documented that the code does not have.

use std::collections::BTreeSet;

use cursor_bridge::protocol::{notification, request, DeltaBody, ErrorKind, Options};

fn doc() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../protocol.md"))
        .expect("protocol.md at the repo root")
}

/// Names in `### \`name\`` headings.
fn documented_sections(doc: &str) -> BTreeSet<String> {
    doc.lines()
        .filter_map(|l| l.strip_prefix("### `"))
        .filter_map(|l| l.strip_suffix('`'))
        .map(str::to_string)
        .collect()
}

/// First-column names of table rows like "| `name` | …".
fn table_names(doc: &str, after_heading: &str) -> BTreeSet<String> {
    let start = doc.find(after_heading).unwrap_or_else(|| panic!("protocol.md lacks {after_heading:?}"));
    doc[start..]
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split('`').next())
        .map(str::to_string)
        .collect()
}

#[test]
fn every_method_and_notification_is_documented_and_nothing_else() {
    let doc = doc();
    let in_code: BTreeSet<String> = request::ALL.iter().chain(notification::ALL).map(|s| s.to_string()).collect();
    assert_eq!(documented_sections(&doc), in_code, "### sections of protocol.md vs sidecar/src/protocol/");
}

#[test]
fn every_delta_kind_is_documented() {
    let in_code: BTreeSet<String> = DeltaBody::KINDS.iter().map(|s| s.to_string()).collect();
    assert_eq!(table_names(&doc(), "### `chat/delta`"), in_code);
}

#[test]
fn every_error_kind_is_documented_with_its_code() {
    let doc = doc();
    let in_code: BTreeSet<String> = ErrorKind::ALL.iter().map(|k| k.as_str().to_string()).collect();
    assert_eq!(table_names(&doc, "`data.kind`:"), in_code);
    for kind in ErrorKind::ALL {
        assert!(
            doc.contains(&format!("| {} |", cursor_bridge::protocol::error_code(*kind))),
            "code {} of {kind} is not in the codes table",
            cursor_bridge::protocol::error_code(*kind)
        );
        // The wire name serde writes is the documented one.
        assert_eq!(serde_json::to_value(kind).unwrap(), serde_json::json!(kind.as_str()));
    }
}

#[test]
fn every_json_example_parses() {
    let doc = doc();
    let mut count = 0;
    let mut in_json = false;
    for line in doc.lines() {
        match line.trim() {
            "```json" => in_json = true,
            "```" => in_json = false,
            l if in_json && !l.is_empty() => {
                serde_json::from_str::<serde_json::Value>(l).unwrap_or_else(|e| panic!("bad JSON example {l}: {e}"));
                count += 1;
            }
            _ => {}
        }
    }
    assert!(count >= 20, "only {count} JSON examples");
}

#[test]
fn every_initialize_option_is_documented_with_its_default() {
    let doc = doc();
    let defaults = serde_json::to_value(Options::default()).unwrap();
    let in_code: BTreeSet<String> = defaults.as_object().unwrap().keys().cloned().collect();
    assert_eq!(table_names(&doc, "`options`:"), in_code);
    for (key, value) in defaults.as_object().unwrap() {
        let shown = if value.is_null() { "null".to_string() } else { value.to_string() };
        assert!(doc.contains(&format!("| `{key}` | {shown} |")), "default of {key} ({shown}) not documented");
    }
}

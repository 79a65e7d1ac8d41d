//! Image input on `cursor-bridge serve`, every route, against the CLI double: an inline image of
//! the new user message reaches the agent as an ACP `image` block (the double keeps what it got
//! with the turn) when its `initialize` advertises `promptCapabilities.image`, as Cursor's does;
//! otherwise, and on print mode (text only), a 400 that names why. A web URL is refused on both
//! backends: nothing is fetched.

use serde_json::{json, Value};

use crate::http_openai::Server;
use crate::support::*;

const JSON: [(&str, &str); 1] = [("Content-Type", "application/json")];
/// The 8 bytes that open a PNG file, as base64.
const PNG: &str = "iVBORw0KGgo=";

/// One request per route, each with one inline PNG in its (new) user message.
fn requests(label: &str) -> Vec<(&'static str, Value)> {
    let data_url = format!("data:image/png;base64,{PNG}");
    vec![
        (
            "/v1/chat/completions",
            json!({"model": "auto", "messages": [{"role": "user", "content": [
                {"type": "text", "text": format!("{label} chat: what is this?")},
                {"type": "image_url", "image_url": {"url": data_url}}]}]}),
        ),
        (
            "/v1/responses",
            json!({"model": "auto", "input": [{"role": "user", "content": [
                {"type": "input_text", "text": format!("{label} responses: what is this?")},
                {"type": "input_image", "image_url": data_url}]}]}),
        ),
        (
            "/v1/messages",
            json!({"model": "claude-opus-5-5", "max_tokens": 64, "messages": [{"role": "user", "content": [
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
                {"type": "text", "text": format!("{label} messages: what is this?")}]}]}),
        ),
    ]
}

/// The images the ACP agent got with the turn whose prompt has `label`.
fn images_with(dir: &TestDir, label: &str) -> Option<Value> {
    dir.acp_sessions()
        .iter()
        .flat_map(|s| s["turns"].as_array().cloned().unwrap_or_default())
        .find_map(|t| t["user"].as_str().is_some_and(|u| u.contains(label)).then(|| t["images"].clone()))
}

/// How the backends differ in this file.
struct Expected {
    /// What an inline image in a request of `path` comes to (status and body of the answer).
    inline: fn(&TestDir, &str, u16, &str),
    /// Why the capability test does not apply.
    not_without_capability: Option<&'static str>,
}
/// Print mode is text only: every image is refused, saying why.
const ON_PRINT: Expected = Expected {
    inline: |_, path, status, text| {
        assert_eq!(status, 400, "{path}: {text}");
        assert!(text.contains("image input needs Cursor's ACP mode"), "{path}: {text}");
    },
    not_without_capability: Some("ACP only: print mode refuses every image (the test above)"),
};
/// ACP: the image reaches the agent as an image block of the prompt.
const ON_ACP: Expected = Expected {
    inline: |dir, path, status, text| {
        assert_eq!(status, 200, "{path}: {text}");
        let route = path.rsplit('/').next().unwrap().replace("completions", "chat");
        let label = format!("inline {route}");
        let mut got = None;
        assert!(eventually(TIMEOUT, || {
            got = images_with(dir, &label);
            got.is_some()
        }));
        assert_eq!(got.unwrap(), json!([{"mimeType": "image/png", "data": PNG}]), "{path}");
    },
    not_without_capability: None,
};

#[test]
fn an_inline_image_reaches_an_agent_that_takes_images_and_is_refused_clearly_elsewhere() {
    let dir = TestDir::new();
    let server = Server::start(&dir, &[]);
    for (path, body) in requests("inline") {
        let (status, _, text) = server.request("POST", path, &JSON, &body.to_string());
        (per_backend(ON_PRINT, ON_ACP).inline)(&dir, path, status, &text);
    }
    // A web URL: refused before any turn, on both backends.
    let before = dir.turn_records().len();
    let body = json!({"model": "auto", "messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}]}]});
    let (status, _, text) = server.request("POST", "/v1/chat/completions", &JSON, &body.to_string());
    assert_eq!(status, 400, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["error"]["code"], "image_url_not_supported", "{text}");
    assert_eq!(v["error"]["param"], "messages[0].content[0].image_url", "{text}");
    assert_eq!(dir.turn_records().len(), before, "no turn ran");
}

#[test]
fn an_acp_agent_that_does_not_advertise_images_gets_none() {
    if skipped(per_backend(ON_PRINT, ON_ACP).not_without_capability) {
        return;
    }
    let dir = TestDir::new();
    let server = Server::start(&dir, &[("CURSOR_DOUBLE_ACP_PROMPT_IMAGE", "off")]);
    for (path, body) in requests("no capability") {
        let (status, _, text) = server.request("POST", path, &JSON, &body.to_string());
        assert_eq!(status, 400, "{path}: {text}");
        assert!(text.contains("promptCapabilities.image"), "{path}: {text}");
    }
    assert!(dir.acp_sessions().iter().all(|s| s["turns"].as_array().is_none_or(Vec::is_empty)), "no turn ran");
}

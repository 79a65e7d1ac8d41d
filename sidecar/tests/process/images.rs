//! Image input over stdio (what the VS Code provider sends for a model whose `imageInput` is
//! true), against the CLI double: the models say whether they take images; an image of the new
//! message reaches an ACP agent that takes them as an `image` block of the prompt; print mode
//! (text only) and an agent that does not advertise `promptCapabilities.image` refuse the turn,
//! saying why, and a malformed image is refused before any turn runs.

use serde_json::{json, Value};

use crate::support::*;

/// The 8 bytes that open a PNG file, as base64.
const PNG: &str = "iVBORw0KGgo=";

/// How the backends differ in this file.
struct Expected {
    /// Every model's `imageInput`.
    models_take_images: bool,
    /// What `chat/send` with one image comes to.
    with_an_image: fn(&TestDir, &Value),
    /// Why the capability test does not apply.
    not_without_capability: Option<&'static str>,
}
/// Print mode is text only: the models say so, and an image is refused, naming the way out.
const ON_PRINT: Expected = Expected {
    models_take_images: false,
    with_an_image: |_, r| {
        assert_eq!(r["error"]["data"]["kind"], "invalidParams", "{r}");
        let message = r["error"]["message"].as_str().unwrap_or("");
        assert!(message.contains("image input needs Cursor's ACP mode"), "{r}");
        assert!(r["error"]["data"]["hint"].as_str().unwrap_or("").contains("cursorBridge.backend"), "{r}");
    },
    not_without_capability: Some("ACP only: print mode refuses every image (the test above)"),
};
/// ACP (Cursor's agent advertises images): the image goes with the prompt.
const ON_ACP: Expected = Expected {
    models_take_images: true,
    with_an_image: |dir, r| {
        assert!(r.get("result").is_some(), "{r}");
        let got =
            dir.acp_sessions().iter().flat_map(|s| s["turns"].as_array().cloned().unwrap_or_default()).find_map(|t| {
                t["user"].as_str().is_some_and(|u| u.contains("what is this")).then(|| t["images"].clone())
            });
        assert_eq!(got, Some(json!([{"mimeType": "image/png", "data": PNG}])));
    },
    not_without_capability: None,
};

fn image_turn(images: Value) -> Value {
    json!({"turnId": "img", "model": "auto", "mode": "ask", "messages": [user("what is this?")], "images": images})
}

#[test]
fn models_say_whether_they_take_images_and_an_image_reaches_an_agent_that_does() {
    let expected = per_backend(ON_PRINT, ON_ACP);
    let dir = TestDir::new();
    let mut s = Sidecar::start(&dir);
    s.initialize(&dir, json!({}));
    let models = s.request("models/list", json!({}));
    let models = models["result"]["models"].as_array().expect("models").clone();
    assert!(!models.is_empty());
    for m in &models {
        assert_eq!(m["capabilities"]["imageInput"], expected.models_take_images, "{m}");
    }
    let (_, r) = s.chat(image_turn(json!([{"mimeType": "image/png", "data": PNG}])));
    (expected.with_an_image)(&dir, &r);
}

#[test]
fn a_malformed_image_is_refused_before_any_turn_runs() {
    let dir = TestDir::new();
    let mut s = Sidecar::start(&dir);
    s.initialize(&dir, json!({}));
    for (image, says) in [
        (json!({"mimeType": "image/tiff", "data": PNG}), "image/tiff"),
        (json!({"mimeType": "image/png", "data": "not base64!"}), "not base64"),
    ] {
        let (deltas, r) = s.chat(image_turn(json!([image])));
        assert_eq!(r["error"]["data"]["kind"], "invalidParams", "{r}");
        assert!(r["error"]["message"].as_str().unwrap_or("").contains(says), "{r}");
        assert!(r["error"]["message"].as_str().unwrap_or("").contains("images[0]"), "{r}");
        assert!(deltas.is_empty(), "{deltas:?}");
    }
    assert!(dir.turn_records().is_empty(), "no print turn ran");
    assert!(dir.acp_sessions().iter().all(|s| s["turns"].as_array().is_none_or(Vec::is_empty)), "no ACP turn ran");
}

#[test]
fn an_acp_agent_that_does_not_advertise_images_makes_no_model_claim_them() {
    if skipped(per_backend(ON_PRINT, ON_ACP).not_without_capability) {
        return;
    }
    let dir = TestDir::new();
    let mut s = Launch::new(&dir).env("CURSOR_DOUBLE_ACP_PROMPT_IMAGE", "off").start();
    s.initialize(&dir, json!({}));
    // The first turn starts an agent, which says it takes no images.
    let (_, r) = s.chat(image_turn(json!([{"mimeType": "image/png", "data": PNG}])));
    assert!(r["error"]["message"].as_str().unwrap_or("").contains("promptCapabilities.image"), "{r}");
    let models = s.request("models/list", json!({}));
    for m in models["result"]["models"].as_array().expect("models") {
        assert_eq!(m["capabilities"]["imageInput"], false, "{m}");
    }
}

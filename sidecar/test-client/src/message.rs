//! The JSON-RPC messages a client sends, and the parameters both clients build the same way.

use std::path::Path;

use serde_json::{json, Value};

pub fn request(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

pub fn notification(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "params": params})
}

/// `initialize` for one workspace folder, with `cli` as the Cursor CLI.
pub fn initialize_params(client: (&str, &str), workspace: &Path, cli: &Path, options: Value) -> Value {
    json!({
        "protocolVersion": 1,
        "clientInfo": {"name": client.0, "version": client.1},
        "workspaceFolders": [workspace],
        "cliPath": cli,
        "options": options,
    })
}

/// A message of the conversation in `chat/send`.
pub fn user(text: &str) -> Value {
    json!({"role": "user", "text": text})
}

pub fn assistant(text: &str) -> Value {
    json!({"role": "assistant", "text": text})
}

//! The integration tests that drive the real `cursor-bridge` binary over its pipes (and its HTTP
//! server), against the CLI test double: one test binary, one module per group. Rerun a group
//! alone by its name, e.g. `cargo nextest run -p cursor-bridge --test process fault_matrix`.
//!
//! The heavy tier (the soak, the fault matrix, the `openai` Python client, and the ACP cases that
//! wait out a real time bound) is `#[ignore]`d with its reason, so a plain `cargo test` stays
//! fast; `cargo xtask test` runs it on both backends (xtask/src/tiers.rs), and
//! `cargo test -p cursor-bridge --test process -- --ignored` runs it by hand.
//!
//! Linux only: the suite counts processes, zombies and descriptors through `/proc` and signals
//! them with POSIX calls. On macOS and Windows the process guarantees are tested by the unit tests
//! of `backend/process` instead, and CI says so when it runs there (docs/platforms.md).
#![cfg(target_os = "linux")]

mod support;

mod acp_backend;
mod acp_lifecycle;
mod client_tools;
mod doctor;
mod failures;
mod fault_matrix;
mod http_clients;
mod http_images;
mod http_messages;
mod http_openai;
mod http_responses;
mod http_structured;
mod http_tool_choice;
mod images;
mod isolation;
mod orphans;
mod plain_agent;
mod probe;
mod protocol_abuse;
mod protocol_doc;
mod sessions;
mod soak;
mod turns;
mod warm_spares;

/// How the backends differ is stated once per file, in its `Expected` table (`ON_PRINT` /
/// `ON_ACP`, read through `support::per_backend`), not in branches through the tests: only the
/// support layer, which reads each backend's records, asks which backend runs.
#[test]
fn per_backend_differences_live_in_expectation_tables() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/process");
    let mut branching = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == "support.rs" || name == "main.rs" || !name.ends_with(".rs") {
            continue;
        }
        let text = std::fs::read_to_string(entry.path()).unwrap();
        for (n, line) in text.lines().enumerate() {
            // A branch on the backend's name (the fault matrix's fixture lists the backends of
            // each case as data, which is a table).
            let code: String = line.chars().filter(|c| !c.is_whitespace()).collect();
            let asks = ["acp()", "test_backend()==", "test_backend()!=", "matches!(test_backend()"]
                .iter()
                .any(|branch| code.contains(branch));
            if asks && !line.trim_start().starts_with("//") {
                branching.push(format!("{name}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(branching.is_empty(), "state these in the file's Expected table instead:\n{}", branching.join("\n"));
}

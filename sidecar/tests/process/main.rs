//! The integration tests that drive the real `cursor-bridge` binary over its pipes (and its HTTP
//! server), against the CLI test double: one test binary, one module per group. Rerun a group
//! alone by its name, e.g. `cargo nextest run -p cursor-bridge --test process fault_matrix`.
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
mod http_messages;
mod http_openai;
mod http_responses;
mod isolation;
mod orphans;
mod protocol_abuse;
mod protocol_doc;
mod sessions;
mod soak;
mod turns;
mod warm_spares;

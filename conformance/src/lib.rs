//! Conformance of the sidecar's generic ACP client (`cursor_bridge::backend::acp`) against real ACP
//! agents that no one here wrote, run offline. The agents talk to [`fake_model`], a small
//! OpenAI-compatible model server whose answers are deterministic, so every check can say exactly
//! what a client must see. The test itself is `tests/acp_agents/`; `cargo xtask test` installs the
//! agent and runs it (docs/cursor-acp.md, "Conformance against a real agent").

pub mod fake_model;

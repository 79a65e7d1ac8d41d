//! Conformance against real agent CLIs and public suites no one here wrote, run offline. Four
//! test targets:
//!
//! * `tests/acp_agents/`: the sidecar's generic ACP client (`cursor_bridge::backend::acp`)
//!   against real ACP agents, whose model is [`fake_model`], a small OpenAI-compatible server
//!   whose answers are deterministic, so every check can say exactly what a client must see.
//! * `tests/copilot_byok/`: `cursor-bridge serve` as the model of GitHub Copilot CLI in BYOK
//!   mode, the CLI double playing Cursor: Copilot's own tools called the OpenAI way, with its
//!   files really written.
//! * `tests/agent_clients/`: Codex CLI (the Responses API) and Claude Code (the Messages API)
//!   doing jobs with their own tools through `serve`, each configured as the README says.
//! * `tests/http_suites/`: CompatCanary and llm-comply scoring `serve`.
//!
//! What the targets share is here: [`copilot`] (how Copilot CLI is run), and on Linux `serve`
//! (`cursor-bridge serve` for one test) and `processes` (a process run to its end, and what it
//! left behind), used by the three targets that run `serve`.
//!
//! `cargo xtask conformance` (a stage of `cargo xtask test`) installs them and runs all four
//! (docs/cursor-acp.md, "The conformance test"; docs/client-tools.md, "Tested with a real client").

pub mod copilot;
pub mod fake_model;
#[cfg(target_os = "linux")]
pub mod processes;
#[cfg(target_os = "linux")]
pub mod serve;

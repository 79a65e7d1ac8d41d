//! How a turn meets its agent chat (the engine's plan for one turn), and what a turn parked in
//! a call of the client's tools keeps until it is continued (`tools/parked.rs`).

use super::sessions::Session;
use super::tools::ToolSet;
use crate::backend::{Chat, HostedTools};
use crate::vocab::Mode;

/// How the turn meets its agent chat.
#[derive(Clone)]
pub(super) struct Plan {
    pub(super) session: Option<Session>,
    pub(super) chat: Chat,
    pub(super) resumed: bool,
    pub(super) replayed: bool,
    pub(super) prompt: String,
    pub(super) mode: Mode,
    pub(super) model: String,
    pub(super) unattended: bool,
    /// The turn brings the results of the model's tool calls (it continues a tool round).
    pub(super) continuing: bool,
    /// The backend hosts the client's tools for this turn (else the prompt protocol).
    pub(super) hosted: Option<HostedTools>,
}

/// What a parked turn needs to be continued or recorded (`engine/tools/parked.rs`).
pub(super) struct ParkedState {
    pub(super) plan: Plan,
    pub(super) workspace: std::path::PathBuf,
    /// The client's tools of the turn (its later calls are checked against them).
    pub(super) set: ToolSet,
    /// The session record's requests and answers as of the response that carried the calls.
    pub(super) requests: Vec<u64>,
    pub(super) answers: Vec<u64>,
}

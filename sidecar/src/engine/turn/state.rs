//! What outlives a step of the turn: how it meets its agent chat (the plan `plan.rs` makes and
//! the later steps follow), and what a turn parked in a call of the client's tools keeps until
//! it is continued (`tools/parked.rs`). A leaf: the engine's parking holds its state.

use crate::backend::Chat;
use crate::engine::sessions::Session;
use crate::engine::tools::ToolSet;
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
}

/// What a parked turn needs to be continued or recorded (`engine/tools/parked.rs`).
pub struct ParkedState {
    pub(super) plan: Plan,
    pub(super) workspace: std::path::PathBuf,
    /// The client's tools of the turn (its later calls are checked against them).
    pub(super) set: ToolSet,
    /// The session record's requests and answers as of the response that carried the calls.
    pub(super) requests: Vec<u64>,
    pub(super) answers: Vec<u64>,
}

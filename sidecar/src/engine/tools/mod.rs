//! Client-owned tools (docs/client-tools.md): the client (Copilot's agent, an OpenAI agent CLI)
//! owns the tools and the agent's model (Cursor's) calls them. This folder owns the tool set of a turn, our call
//! ids, and the prompt protocol that works on every backend: the tools described in the prompt
//! (`prompt_protocol.rs`), calls held back from the stream (`hold.rs`) and parsed and checked against the
//! tools' schemas (`calls.rs`).

pub mod calls;
pub mod hold;
pub mod parked;
pub mod prompt_protocol;

use crate::vocab::{ToolChoice, ToolDefinition};

/// The client's tools for one turn, and what it allows the model to do with them.
#[derive(Debug, Clone)]
pub struct ToolSet {
    pub tools: Vec<ToolDefinition>,
    pub choice: ToolChoice,
    /// Several calls in one reply (else only the first is kept).
    pub parallel: bool,
}

impl ToolSet {
    /// The tools the model may call this turn (`none`: none; a named choice: that one).
    pub fn offered(&self) -> Vec<&ToolDefinition> {
        match &self.choice {
            ToolChoice::None => Vec::new(),
            ToolChoice::Named(name) => self.tools.iter().filter(|t| &t.name == name).collect(),
            ToolChoice::Auto | ToolChoice::Required => self.tools.iter().collect(),
        }
    }

    /// The model must call a tool (rather than answer in text).
    pub fn must_call(&self) -> bool {
        matches!(self.choice, ToolChoice::Required | ToolChoice::Named(_))
    }

    /// The tools as the prompt protocol describes them, with that description's identity.
    pub fn describe(&self) -> Described {
        let block = prompt_protocol::tools_block(self);
        Described { fingerprint: crate::util::text::fnv1a(&block), block }
    }
}

/// A tool set's description for the model, built once per turn (Copilot's forty schemas are tens
/// of kilobytes), and its fingerprint: a resumed chat that already knows this set is not sent it
/// again.
#[derive(Debug)]
pub struct Described {
    pub block: String,
    pub fingerprint: u64,
}

/// A call id of ours (`call_` + 24 hex digits), never the agent's: the client sees only these.
pub fn new_call_id() -> String {
    format!("call_{:016x}{:08x}", crate::util::ids::random_u64(), crate::util::ids::random_u64() as u32)
}

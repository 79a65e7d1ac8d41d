//! The probe's bookkeeping, shared by its questions (`acp/probe.rs`, `print/probe.rs`) and its
//! run (`probe.rs`): the questions and the assumption each checks, and the findings so far.

use std::path::Path;

use serde_json::Value;

use super::cli::CursorCli;
use super::discovery::CliCommand;
use crate::backend::reports::{ProbeFinding, ProbeOutcome, ProbePlan};

/// Why a question that costs a request was not asked.
pub const NO_CONSENT: &str = "it sends a prompt, and spending requests was not agreed to (`--yes`)";
/// The requests the probe spends at most, with consent (said before asking for it).
pub const MOST_REQUESTS: u32 = 4;

/// Each question: its id and the assumption it checks.
pub const QUESTIONS: &[(&str, &str)] = &[
    ("acpStart", "Does `agent acp` start and complete the handshake?"),
    ("catalogue", "Does `session/new` advertise the model catalogue?"),
    ("sessionTools", "Does a new session list the tools of the MCP server it is given, within 5 s?"),
    ("promptUsage", "Does a prompt's answer report token usage?"),
    (
        "toolPermission",
        "Does a call of the bridge's MCP tool reach the bridge, and is Cursor's permission request for it recognised?",
    ),
    ("sessionLoad", "Does another `agent acp` process load a session (`session/load`), and with the catalogue?"),
    ("cancelCommands", "Does `session/cancel` stop a command the agent is running?"),
    (
        "chatStore",
        "Is a print-mode chat kept where the bridge looks for it (`~/.cursor/chats/<md5 of the folder>/<chat>`)?",
    ),
];

/// The state of one probe run, handed to each question.
pub struct Asking<'a> {
    pub cli: &'a CursorCli,
    pub command: &'a CliCommand,
    pub scratch: &'a Path,
    /// A second scratch folder, not locked down: the agent's shell may run the one command the
    /// cancel question asks for there (every other permission request is refused).
    pub shell_scratch: &'a Path,
    pub plan: ProbePlan,
    pub spent: u32,
    pub findings: Vec<ProbeFinding>,
}

impl Asking<'_> {
    pub fn found(
        &mut self,
        id: &'static str,
        outcome: ProbeOutcome,
        observed: impl Into<String>,
        bridge: impl Into<String>,
        measured: Value,
    ) {
        let question = QUESTIONS.iter().find(|(q, _)| *q == id).map_or("", |(_, text)| text).to_string();
        // Nothing private: the only path that could appear is our own scratch folder's.
        let scrub = |s: String| {
            s.replace(&*self.shell_scratch.to_string_lossy(), "<scratch>")
                .replace(&*self.scratch.to_string_lossy(), "<scratch>")
        };
        self.findings.retain(|f| f.id != id);
        self.findings.push(ProbeFinding {
            id,
            question,
            outcome,
            observed: scrub(observed.into()),
            bridge: scrub(bridge.into()),
            measured,
        });
    }

    pub fn not_asked(&mut self, id: &'static str, why: &str) {
        self.found(id, ProbeOutcome::NotAsked, format!("Not asked: {why}."), "", Value::Null);
    }
}

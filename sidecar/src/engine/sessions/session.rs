//! One session (a conversation's chat, its identity as hashes) and how a `chat/send` is matched to
//! one: [`Lookup`] in, [`Match`] out.

use serde::{Deserialize, Serialize};

use super::SessionSummary;
use crate::vocab::Mode;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Session {
    pub id: String,
    pub chat_id: String,
    #[serde(default)]
    pub conversation_id: Option<String>,
    pub mode: Mode,
    pub model: String,
    pub workspace: String,
    /// Hashes of the user requests the CLI chat has completed, in order.
    pub requests: Vec<u64>,
    /// Hashes ([`answer_hash`]) of the answers to them that had text, in order.
    #[serde(default)]
    pub answers: Vec<u64>,
    /// Requests sent to this chat that did not complete (failed, cancelled): a client that kept
    /// them in its history still continues this chat.
    #[serde(default)]
    pub attempted: Vec<u64>,
    /// Resumes of this chat in a row that failed before the agent said anything; at
    /// [`MAX_RESUME_FAILURES`] the chat is given up and the history replayed into a new one.
    #[serde(default)]
    pub resume_failures: u32,
    pub turns: u32,
    pub created_ms: u64,
    pub last_used_ms: u64,
    /// Client-tools mode: the fingerprint of the tool set the chat was last told about (0: none),
    /// so an unchanged set is not sent again.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub tools: u64,
    /// The sidecar process that last used this session (set when recorded): Clear Sessions clears
    /// the asking process's own unless asked for all, as the file is shared by every sidecar.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub owner: String,
    /// The front door whose turns use it (set when recorded): each door's `maxSessions` counts
    /// only its own, so one door's traffic never pushes out another's conversations.
    #[serde(default)]
    pub door: Door,
    /// The client-tool calls of the chat's last reply (prompt protocol): results that come alone
    /// (the Copilot harness sends a marker and the results, no transcript) still name each tool.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<CallName>,
}

/// A client-tool call the chat made: its id and the tool's name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallName {
    pub call_id: String,
    pub name: String,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A front door, as far as sessions are concerned. Files written before doors were recorded
/// read as `stdio`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Door {
    #[default]
    Stdio,
    Http,
}

/// What Clear Sessions clears.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClearScope<'a> {
    /// The sessions this process last used (this editor window's).
    Mine,
    /// Every session in the file, every sidecar's.
    All,
    One(&'a str),
}

pub const MAX_RESUME_FAILURES: u32 = 2;

impl Session {
    pub fn summary(&self) -> SessionSummary {
        SessionSummary {
            session_id: self.id.clone(),
            conversation_id: self.conversation_id.clone(),
            mode: self.mode,
            model: self.model.clone(),
            workspace: self.workspace.clone(),
            turns: self.turns,
            last_used_ms: self.last_used_ms,
        }
    }

    /// How many requests at the end of `history` this chat was given but never completed, if
    /// `history` is this chat's completed history followed by only such requests.
    pub(super) fn missing_from(&self, history: &[u64]) -> Option<usize> {
        let rest = history.strip_prefix(self.requests.as_slice())?;
        rest.iter().all(|h| self.attempted.contains(h)).then_some(rest.len())
    }

    /// [`Session::missing_from`] for a `history` whose beginning may be cut off: a client that
    /// named this session (its marker) and sent only the newest turns, or none at all (VS Code's
    /// Copilot harness sends a `previous_response_id`'s marker and only what is new). The longest
    /// start of `history` that ends this chat's completed requests is taken as seen; what follows
    /// must be requests given but never completed. Returns how many of those there are, and how
    /// many requests of `history` the chat had completed.
    pub(super) fn missing_from_trimmed(&self, history: &[u64]) -> Option<(usize, usize)> {
        (0..=history.len().min(self.requests.len())).rev().find_map(|k| {
            let (seen, rest) = history.split_at(k);
            let fits = self.requests.ends_with(seen) && rest.iter().all(|h| self.attempted.contains(h));
            fits.then_some((rest.len(), k))
        })
    }

    /// What this chat has seen once a turn continued it: the client's `history` (the requests
    /// before the turn's own) and `answers`, put after what the chat had seen before when the
    /// client's history was trimmed ([`Session::missing_from_trimmed`]), so a later request with
    /// the whole transcript still matches.
    pub fn continued_with(&self, history: Vec<u64>, answers: Vec<u64>) -> (Vec<u64>, Vec<u64>) {
        if history.starts_with(&self.requests) {
            return (history, answers);
        }
        let shared = self.missing_from_trimmed(&history).map_or(0, |(_, seen)| seen);
        let requests = [self.requests.as_slice(), &history[shared..]].concat();
        let answers = if answers.starts_with(&self.answers) {
            answers
        } else {
            let shared = (1..=answers.len().min(self.answers.len()))
                .rev()
                .find(|&k| self.answers.ends_with(&answers[..k]))
                .unwrap_or(0);
            [self.answers.as_slice(), &answers[shared..]].concat()
        };
        (requests, answers)
    }
}

/// What identifies the conversation of a `chat/send`.
#[derive(Debug, Clone, Copy)]
pub struct Lookup<'a> {
    pub conversation_id: Option<&'a str>,
    pub session_id: Option<&'a str>,
    pub mode: Mode,
    pub workspace: &'a str,
    /// `workspace` is a root of per-conversation folders: a session in any folder below it
    /// matches (each conversation has a folder of its own there).
    pub under: bool,
    /// Hashes of the user requests before the new one.
    pub history: &'a [u64],
    /// [`answer_hash`]es of the assistant messages before the new request.
    pub answers: &'a [u64],
}

impl Lookup<'_> {
    pub(super) fn place_matches(&self, workspace: &str) -> bool {
        if self.under {
            std::path::Path::new(workspace).parent() == Some(std::path::Path::new(self.workspace))
        } else {
            workspace == self.workspace
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Match {
    /// The chat has seen the earlier requests, except the last `missing` ones (given to it
    /// but never completed): resume it with those and the new one.
    Resume { session: Session, missing: usize },
    /// The conversation is known but its history changed (an edited request), or its chat was
    /// given up: keep the session id, start a new chat and replay the history into it.
    Diverged(Session),
    /// Nothing to resume.
    New,
}

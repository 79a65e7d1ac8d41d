//! What goes on the CLI's stdin for a turn, and which user messages identify the conversation.
//!
//! VS Code's Chat view sends, per turn, `[system, user(environment/workspace context),
//! user(<context>… <userRequest>typed text</userRequest>), assistant, user(…), …]`. Only the text
//! inside `<userRequest>` identifies a turn: the context messages are the same for every chat in a
//! workspace. A client that uses no such markers (a plain API client) has every user message count.

use crate::engine::sessions::{answer_hash, request_hash, CallName, Session};
use crate::engine::tools::prompt_protocol;
use crate::error::{BridgeError, Result};
use crate::vocab::{ChatMessage, Role, ToolCall, ToolResult};

const OPEN: &str = "<userRequest>";
const CLOSE: &str = "</userRequest>";

/// The typed text inside `<userRequest>…</userRequest>`, if the message has the marker.
pub fn user_request(text: &str) -> Option<&str> {
    let start = text.find(OPEN)? + OPEN.len();
    let end = text[start..].find(CLOSE).map(|i| start + i).unwrap_or(text.len());
    Some(text[start..end].trim())
}

/// A `chat/send` message list, read as a conversation.
#[derive(Debug)]
pub struct Conversation<'a> {
    messages: &'a [ChatMessage],
    /// Indices of the user messages that are requests (turns), in order.
    requests: Vec<usize>,
    uses_markers: bool,
}

impl<'a> Conversation<'a> {
    pub fn parse(messages: &'a [ChatMessage]) -> Result<Self> {
        let uses_markers = messages.iter().any(|m| m.role == Role::User && m.text.contains(OPEN));
        // A message that carries tool results answers the model, not the user's next request.
        let requests: Vec<usize> = messages
            .iter()
            .enumerate()
            .filter(|(_, m)| m.role == Role::User && m.tool_results.is_empty())
            .filter(|(_, m)| !uses_markers || m.text.contains(OPEN))
            .map(|(i, _)| i)
            .collect();
        let Some(&last) = requests.last() else {
            // A tool round of a client that sends only what is new (VS Code's Copilot harness:
            // the marker of the reply that made the calls, then their results): results alone.
            let results = messages.iter().rposition(|m| !m.tool_results.is_empty());
            if results.is_some_and(|i| !messages[i + 1..].iter().any(|m| m.role == Role::Assistant)) {
                return Ok(Conversation { messages, requests, uses_markers });
            }
            return Err(BridgeError::invalid_params("`messages` has no user message"));
        };
        let after = &messages[last + 1..];
        if after.last().is_some_and(|m| m.role == Role::Assistant) {
            return Err(BridgeError::invalid_params("the last message must be from the user (nothing to answer)"));
        }
        if after.iter().any(|m| m.role == Role::Assistant) && !after.iter().any(|m| !m.tool_results.is_empty()) {
            return Err(BridgeError::invalid_params("the last message must be from the user (nothing to answer)"));
        }
        Ok(Conversation { messages, requests, uses_markers })
    }

    /// The results this turn brings for the model's last tool calls, when the turn continues a
    /// tool round rather than answering a new request.
    pub fn pending_results(&self) -> Option<Vec<&'a ToolResult>> {
        let last_answer = self.messages.iter().rposition(|m| m.role == Role::Assistant);
        let from = match (last_answer, self.requests.last()) {
            (Some(answer), Some(&request)) if answer > request => answer + 1,
            (Some(answer), None) => answer + 1,
            (None, None) => 0,
            _ => return None,
        };
        let results: Vec<&ToolResult> = self.messages[from..].iter().flat_map(|m| m.tool_results.iter()).collect();
        (!results.is_empty()).then_some(results)
    }

    /// Every tool call the model made in this conversation.
    pub fn tool_calls(&self) -> Vec<&'a ToolCall> {
        self.messages.iter().flat_map(|m| m.tool_calls.iter()).collect()
    }

    /// The results of a continuation, as the next prompt of the chat that made the calls; a call
    /// the conversation does not carry (results alone) is named from `made`, the chat's own.
    pub fn results_prompt(&self, made: &[CallName]) -> String {
        let carried = self.tool_calls();
        let named: Vec<ToolCall> = made
            .iter()
            .filter(|m| !carried.iter().any(|c| c.call_id == m.call_id))
            .map(|m| ToolCall { call_id: m.call_id.clone(), name: m.name.clone(), input: Default::default() })
            .collect();
        let calls: Vec<&ToolCall> = carried.into_iter().chain(&named).collect();
        prompt_protocol::results_prompt(self.pending_results().unwrap_or_default(), &calls)
    }

    /// Hashes of every request, the new one included: what the chat of a continuation has seen.
    pub fn all_request_hashes(&self) -> Vec<u64> {
        self.requests.iter().map(|&i| request_hash(self.request_text(i))).collect()
    }

    /// `answer_hash`es of every assistant message that has text (a continuation's lookup).
    pub fn all_answer_hashes(&self) -> Vec<u64> {
        self.messages.iter().filter(|m| m.role == Role::Assistant).filter_map(|m| answer_hash(&m.text)).collect()
    }

    fn request_text(&self, i: usize) -> &'a str {
        let text = self.messages[i].text.as_str();
        if self.uses_markers {
            user_request(text).unwrap_or(text)
        } else {
            text.trim()
        }
    }

    /// Hashes of the requests before the new one: what a resumable chat must have seen.
    pub fn history_hashes(&self) -> Vec<u64> {
        let n = self.requests.len().saturating_sub(1);
        self.requests[..n].iter().map(|&i| request_hash(self.request_text(i))).collect()
    }

    /// `answer_hash`es of the assistant messages before the new request that have text.
    pub fn answer_hashes(&self) -> Vec<u64> {
        self.messages[..self.last_request()]
            .iter()
            .filter(|m| m.role == Role::Assistant)
            .filter_map(|m| answer_hash(&m.text))
            .collect()
    }

    /// The requests and answers the chat has seen once this turn is answered (before the
    /// answer's own), after what `prior`, the session it continues, had seen: a history whose
    /// beginning the client left out (its marker named the session) keeps the chat's earlier
    /// turns. `continuing`: a tool round, whose chat has seen the request the calls answer.
    pub fn seen_after(&self, prior: Option<&Session>, continuing: bool) -> (Vec<u64>, Vec<u64>) {
        let (history, answers) = if continuing {
            (self.all_request_hashes(), self.all_answer_hashes())
        } else {
            (self.history_hashes(), self.answer_hashes())
        };
        let (mut requests, answers) = match prior {
            Some(session) => session.continued_with(history, answers),
            None => (history, answers),
        };
        if !continuing {
            requests.push(self.new_request_hash());
        }
        (requests, answers)
    }

    /// With no request (results alone) the hash of no text, which no chat was asked.
    pub fn new_request_hash(&self) -> u64 {
        self.requests.last().map_or_else(|| request_hash(""), |&i| request_hash(self.request_text(i)))
    }

    pub fn has_history(&self) -> bool {
        self.requests.len() > 1
    }

    /// Whether a user request is there; else the conversation is a tool round's results alone.
    pub fn has_request(&self) -> bool {
        !self.requests.is_empty()
    }

    /// The new request's index; with none (results alone), the end of the messages.
    fn last_request(&self) -> usize {
        self.requests.last().copied().unwrap_or(self.messages.len())
    }

    /// A resumed chat already has everything but the new message: send it verbatim.
    pub fn resume_prompt(&self) -> String {
        self.resume_prompt_with(0)
    }

    /// A resumed chat that was given the last `missing` earlier requests but never completed
    /// them (a failed or cancelled turn): send those again, then the new message, verbatim.
    pub fn resume_prompt_with(&self, missing: usize) -> String {
        let Some(last) = self.requests.len().checked_sub(1) else { return String::new() };
        let from = self.requests[last - missing.min(last)];
        self.messages[from..]
            .iter()
            .filter(|m| m.role == Role::User && m.tool_results.is_empty())
            .map(|m| m.text.as_str())
            .collect::<Vec<_>>()
            .join("\n\n")
    }

    /// A new chat: the context-only user messages, the earlier turns replayed inside a short
    /// framing (newest kept within `replay_max_chars`), then the new message verbatim. With a
    /// single user message and no history this is that message's text, byte for byte.
    pub fn new_chat_prompt(&self, replay_max_chars: usize, include_system: bool) -> String {
        let mut parts: Vec<String> = Vec::new();
        if include_system {
            parts.extend(self.messages.iter().filter(|m| m.role == Role::System).map(|m| m.text.clone()));
        }
        let first_request = self.requests.first().copied().unwrap_or(self.messages.len());
        // Context messages (no marker) that come before the new request, e.g. <environment_info>.
        let continuing = self.pending_results().is_some();
        parts.extend(
            self.messages[..self.last_request()]
                .iter()
                .enumerate()
                .filter(|(i, m)| m.role == Role::User && m.tool_results.is_empty() && !self.requests.contains(i))
                .filter(|(i, _)| *i < first_request || !(self.has_history() || continuing))
                .map(|(_, m)| m.text.clone()),
        );
        if continuing {
            // A tool round whose chat is gone: replay up to the calls, then send the results.
            let last_answer = self.messages.iter().rposition(|m| m.role == Role::Assistant).unwrap_or(0);
            parts.push(self.replay_block(last_answer + 1, replay_max_chars));
            parts.push(self.results_prompt(&[]));
            return parts.join("\n\n");
        }
        if self.has_history() {
            parts.push(self.replay_block(self.last_request(), replay_max_chars));
        }
        parts.push(self.resume_prompt());
        parts.join("\n\n")
    }

    /// The messages before `upto`, replayed: requests, answers with the tool calls they made,
    /// and the tools' results.
    fn replay_block(&self, upto: usize, max_chars: usize) -> String {
        let calls = self.tool_calls();
        let turns: Vec<(&str, String)> = self.messages[..upto]
            .iter()
            .enumerate()
            .filter_map(|(i, m)| match m.role {
                Role::User if self.requests.contains(&i) => Some(("user", self.request_text(i).to_string())),
                Role::User if !m.tool_results.is_empty() => {
                    Some(("tool results", prompt_protocol::results_prompt(&m.tool_results, &calls)))
                }
                Role::Assistant if !m.text.trim().is_empty() || !m.tool_calls.is_empty() => {
                    let mut text = m.text.trim().to_string();
                    for call in &m.tool_calls {
                        if !text.is_empty() {
                            text.push('\n');
                        }
                        text.push_str(&prompt_protocol::call_text(call));
                    }
                    Some(("assistant", text))
                }
                _ => None,
            })
            .collect();
        // Keep the newest turns that fit; a single oversized turn keeps its end.
        let mut kept: Vec<String> = Vec::new();
        let mut used = 0usize;
        for (role, text) in turns.iter().rev() {
            let text = text.as_str();
            let room = max_chars.saturating_sub(used);
            if room == 0 {
                break;
            }
            let chars = text.chars().count();
            let text = if chars > room { tail_chars(text, room) } else { text };
            used += text.chars().count();
            kept.push(format!("[{role}]\n{text}"));
        }
        kept.reverse();
        let omitted = turns.len() - kept.len();
        let mut block = String::from(
            "<conversation_history>\nThis conversation began in an earlier chat that could not be resumed. \
             Its messages follow, oldest first; treat them as what was said before.\n",
        );
        if omitted > 0 {
            block.push_str(&format!("[{omitted} earlier messages omitted]\n"));
        }
        block.push('\n');
        block.push_str(&kept.join("\n\n"));
        block.push_str("\n</conversation_history>");
        block
    }

    /// A one-shot utility request (title, progress messages) carries its own system prompt, which
    /// is the whole point of the request: send everything, in order.
    pub fn utility_prompt(&self) -> String {
        self.messages.iter().map(|m| m.text.as_str()).filter(|t| !t.trim().is_empty()).collect::<Vec<_>>().join("\n\n")
    }
}

fn tail_chars(s: &str, n: usize) -> &str {
    let skip = s.chars().count().saturating_sub(n);
    match s.char_indices().nth(skip) {
        Some((i, _)) => &s[i..],
        None => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(role: Role, text: &str) -> ChatMessage {
        ChatMessage::new(role, text)
    }

    fn copilot_turn(typed: &str) -> ChatMessage {
        m(
            Role::User,
            &format!("<context>date</context>\n<reminderInstructions>be brief</reminderInstructions>\n<userRequest>\n{typed}\n</userRequest>"),
        )
    }

    const ENV: &str = "<environment_info>Linux</environment_info>\n<workspace_info>/w</workspace_info>";

    #[test]
    fn single_message_is_sent_verbatim() {
        let msgs = vec![m(Role::User, "  What is 2+2?\n")];
        let c = Conversation::parse(&msgs).unwrap();
        assert_eq!(c.new_chat_prompt(1000, false), "  What is 2+2?\n");
        assert!(!c.has_history());
    }

    #[test]
    fn copilot_first_turn_keeps_context_and_drops_system() {
        let msgs = vec![m(Role::System, "You are Copilot"), m(Role::User, ENV), copilot_turn("hi")];
        let c = Conversation::parse(&msgs).unwrap();
        let p = c.new_chat_prompt(1000, false);
        assert!(p.starts_with(ENV));
        assert!(p.ends_with("</userRequest>"));
        assert!(!p.contains("Copilot"));
        assert!(c.new_chat_prompt(1000, true).starts_with("You are Copilot"));
    }

    #[test]
    fn history_is_the_typed_requests_only() {
        let a = vec![m(Role::User, ENV), copilot_turn("one"), m(Role::Assistant, "1"), copilot_turn("two")];
        let b = vec![
            m(Role::User, "<environment_info>other</environment_info>"),
            copilot_turn("one"),
            m(Role::Assistant, "uno"),
            copilot_turn("three"),
        ];
        let ca = Conversation::parse(&a).unwrap();
        let cb = Conversation::parse(&b).unwrap();
        assert_eq!(ca.history_hashes(), cb.history_hashes());
        assert_eq!(ca.history_hashes(), vec![request_hash("one")]);
        assert_eq!(ca.new_request_hash(), request_hash("two"));
    }

    #[test]
    fn resume_sends_only_the_new_message() {
        let msgs = vec![m(Role::User, "first"), m(Role::Assistant, "answer"), m(Role::User, "second ✓")];
        let c = Conversation::parse(&msgs).unwrap();
        assert_eq!(c.resume_prompt(), "second ✓");
    }

    #[test]
    fn replay_frames_earlier_turns_then_the_new_message() {
        let msgs = vec![m(Role::User, ENV), copilot_turn("one"), m(Role::Assistant, "answer one"), copilot_turn("two")];
        let c = Conversation::parse(&msgs).unwrap();
        let p = c.new_chat_prompt(10_000, false);
        let hist = p.find("<conversation_history>").unwrap();
        assert!(p.starts_with(ENV), "{p}");
        assert!(p[hist..].contains("[user]\none\n\n[assistant]\nanswer one\n</conversation_history>"), "{p}");
        assert!(p.ends_with(&copilot_turn("two").text));
    }

    #[test]
    fn replay_is_bounded_newest_first() {
        let mut msgs = Vec::new();
        for i in 0..10 {
            msgs.push(m(Role::User, &format!("question {i}")));
            msgs.push(m(Role::Assistant, &format!("answer {i} {}", "x".repeat(50))));
        }
        msgs.push(m(Role::User, "final"));
        let c = Conversation::parse(&msgs).unwrap();
        let p = c.new_chat_prompt(200, false);
        assert!(p.contains("answer 9"), "{p}");
        assert!(!p.contains("question 0"), "{p}");
        assert!(p.contains("earlier messages omitted"));
        assert!(p.ends_with("final"));
    }

    #[test]
    fn rejects_conversations_without_a_user_turn_to_answer() {
        assert!(Conversation::parse(&[]).is_err());
        assert!(Conversation::parse(&[m(Role::System, "s")]).is_err());
        assert!(Conversation::parse(&[m(Role::User, "q"), m(Role::Assistant, "a")]).is_err());
    }

    #[test]
    fn utility_prompt_includes_its_system_prompt() {
        let msgs = vec![m(Role::System, "Write a brief title"), m(Role::User, "how do I sort?")];
        let c = Conversation::parse(&msgs).unwrap();
        assert_eq!(c.utility_prompt(), "Write a brief title\n\nhow do I sort?");
    }

    #[test]
    fn user_request_extraction() {
        assert_eq!(user_request("a<userRequest>\n hi \n</userRequest>b"), Some("hi"));
        assert_eq!(user_request("no marker"), None);
        assert_eq!(user_request("<userRequest>unterminated"), Some("unterminated"));
    }
}

//! Planning a turn: where it runs (the user's folder, a scratch folder, a conversation's own, or
//! in client-tools mode a private one), one turn at a time per conversation, the session and
//! chat it meets (resume, replay into a new chat, or new) and its prompt; a tool round's results
//! find the agent's turn parked for them; how the client's tools reach the agent.

use std::cell::OnceCell;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::mpsc;

use super::state::{ParkedState, Plan};
use super::{ClientTools, Incomplete, Turn, TurnRequest};
use crate::backend::{Activity, Chat, Event, EventSink, ToolPolicy};
use crate::engine::config::Placement;
use crate::engine::core::Engine;
use crate::engine::prompt::Conversation;
use crate::engine::session_io::PendingSaves;
use crate::engine::sessions::{new_session_id, Lookup, Match, Session};
use crate::engine::tools::parked::{self, Parked};
use crate::engine::tools::ToolSet;
use crate::error::{BridgeError, Result};
use crate::util::sync::lock;
use crate::vocab::{Mode, ToolResult};

/// A tool round's results, and the agent's turn parked waiting for them.
pub(super) struct Continued<'a> {
    pub(super) parked: Parked<ParkedState>,
    pub(super) results: Vec<&'a ToolResult>,
    /// The client's tools as this request brings them.
    pub(super) set: &'a ToolSet,
}

impl<'a> Turn<'a> {
    /// Check the request, find the agent, then plan the turn in its conversation's lane.
    pub(super) async fn plan(
        engine: &'a Arc<Engine>,
        req: &'a TurnRequest,
        events: mpsc::Sender<Event>,
        saves: &'a PendingSaves,
    ) -> Result<Turn<'a>> {
        let started = Instant::now();
        if req.model.trim().is_empty() {
            return Err(BridgeError::invalid_params("`model` must not be empty"));
        }
        let tools = match req.tools.as_ref().filter(|_| !req.utility) {
            Some(set) => ClientTools::Undecided(set),
            None => ClientTools::None,
        };
        let place = engine.placement_of(req, tools)?;
        let conversation = Conversation::parse(&req.messages)?;
        if !conversation.has_request() && matches!(tools, ClientTools::None) {
            // Results alone continue a tool round of the client's tools, and nothing else.
            return Err(BridgeError::invalid_params("`messages` has no user message"));
        }
        // A missing agent is said before anything else happens.
        engine.backend.locate().await?;
        let activity = Activity::new();
        let mut sink = EventSink::new(events, activity.clone());
        let policy = tools.set().map(|_| Arc::new(ToolPolicy::default()));
        if let Some(policy) = &policy {
            sink.police_tools(policy.clone());
        }

        // One turn at a time per conversation: by its id when the client names it, else by the
        // session the history finds (planned again if the lane was busy).
        let conversation_lane = match &req.conversation_id {
            Some(c) => Some(engine.lanes.enter(&format!("conversation:{c}")).await),
            None => None,
        };
        engine.refresh_sessions().await;
        let mut plan = engine.plan_chat(req, &conversation, &place)?;
        let session_lane = match (&req.conversation_id, &plan.session) {
            (None, Some(session)) if plan.resumed || plan.replayed => {
                let lane = engine.lanes.enter(&format!("session:{}", session.id)).await;
                if lane.waited {
                    engine.refresh_sessions().await;
                    plan = engine.plan_chat(req, &conversation, &place)?;
                }
                Some(lane)
            }
            _ => None,
        };
        // Per-conversation folders: the session's own (made again if something removed it).
        let workspace = conversation_folder(&plan, &place)?;
        Ok(Turn {
            incomplete: None,
            _session_lane: session_lane,
            _conversation_lane: conversation_lane,
            engine,
            req,
            conversation,
            place,
            tools,
            plan,
            workspace,
            owner: req.owner.clone().unwrap_or_else(|| "local".into()),
            sink,
            activity,
            policy,
            described: OnceCell::new(),
            saves,
            started,
        })
    }

    /// A tool round whose agent turn is parked here waiting for these results: taken out, to be
    /// continued. Any other request stops the conversation's turn still waiting for the client.
    pub(super) async fn take_parked(&mut self) -> Result<Option<Continued<'a>>> {
        let mut continued = None;
        if let (Some(set), Some(results)) = (self.tools.set(), self.conversation.pending_results()) {
            let ids: Vec<&str> = results.iter().map(|r| r.call_id.as_str()).collect();
            match self.engine.parking.take(&self.owner, &ids) {
                parked::Taken::Parked(p) => {
                    self.plan = Plan { continuing: true, resumed: true, replayed: false, ..p.state.plan.clone() };
                    // What the chat has seen up to the calls, which results that come alone (under
                    // a marker) do not repeat.
                    if let Some(session) = self.plan.session.as_mut() {
                        (session.requests, session.answers) = (p.state.requests.clone(), p.state.answers.clone());
                    }
                    self.workspace = p.state.workspace.clone();
                    continued = Some(Continued { parked: p, results, set });
                }
                parked::Taken::Detaching(end) => {
                    // The agent is ending the turn that made these calls: once the chat is
                    // recorded the results continue it, rather than a second agent on it or a
                    // replay into a new chat.
                    tracing::info!(turn = %self.req.turn_id, "the results wait for their turn's detach to end");
                    end.wait().await;
                    self.plan = self.engine.plan_chat(self.req, &self.conversation, &self.place)?;
                    self.workspace = conversation_folder(&self.plan, &self.place)?;
                }
                parked::Taken::None => {}
            }
        }
        if continued.is_none() {
            self.abandon_parked();
        }
        Ok(continued)
    }

    /// A new request while an earlier one's tools are still out: that turn is abandoned. Named
    /// conversations go by their id. Without one (HTTP clients), a history that holds the turn's
    /// calls (our ids are random: no other conversation has them) and is not their results
    /// (none, or the client's own followed by new text) has moved on.
    fn abandon_parked(&self) {
        let (conversation_id, conversation) = (&self.req.conversation_id, &self.conversation);
        let abandoned =
            self.engine.parking.remove_if(&self.owner, |s: &ParkedState, call_ids: &[String]| match conversation_id {
                Some(c) => s.plan.session.as_ref().and_then(|s| s.conversation_id.as_ref()) == Some(c),
                None => conversation.tool_calls().iter().any(|call| call_ids.contains(&call.call_id)),
            });
        if abandoned > 0 {
            tracing::info!(turn = %self.req.turn_id, abandoned, "a turn waiting for the client's tools was stopped");
        }
    }

    /// The client's tools are hosted by the backend when it can take them (and always for a
    /// turn that continues a parked one); else they stay in the prompt. Asked once the turn
    /// has its lanes, just before it starts.
    pub(super) fn choose_tools(&mut self, continued: bool) {
        if let ClientTools::Undecided(set) = self.tools {
            let hosted = continued || self.engine.backend.hosts_tools();
            self.tools = if hosted { ClientTools::Hosted(set) } else { ClientTools::Prompt(set) };
        }
    }

    /// The turn starts: its prompt complete, logged, the client told its session, and counted
    /// as given to the chat until it completes.
    pub(super) async fn start(&mut self) {
        self.describe_tools();
        let (req, plan) = (self.req, &self.plan);
        tracing::info!(
            turn = %req.turn_id, backend = self.engine.backend.name(), model = %plan.model, mode = plan.mode.as_str(),
            utility = req.utility, resumed = plan.resumed, replayed = plan.replayed,
            client_tools = self.tools.name(), prompt_bytes = plan.prompt.len(), "turn starts"
        );
        tracing::trace!(target: "cursor_bridge::content", turn = %req.turn_id, prompt = %plan.prompt);
        self.announce().await;
        // Until the turn completes, it counts as given to the chat but not completed: a client
        // that keeps it in its history (after a failure or a cancel) still continues this chat.
        let plan = &self.plan;
        self.incomplete = plan.session.as_ref().filter(|_| plan.resumed && !plan.continuing).map(|s| Incomplete {
            engine: self.engine,
            saves: self.saves,
            session_id: s.id.clone(),
            chat_id: s.chat_id.clone(),
            request: self.conversation.new_request_hash(),
            resume_failed: false,
        });
    }

    /// On the prompt protocol, the tool set's description goes in when the chat has not been
    /// told about this set yet.
    pub(super) fn describe_tools(&mut self) {
        let ClientTools::Prompt(set) = self.tools else { return };
        let described = self.described.get_or_init(|| set.describe());
        let plan = &self.plan;
        let known = plan.resumed && plan.session.as_ref().is_some_and(|s| s.tools == described.fingerprint);
        if known || set.offered().is_empty() {
            return;
        }
        self.plan.prompt = format!("{}\n\n{}", described.block, self.plan.prompt);
    }

    /// Tell the client which session the turn runs in and how (again after a fallback, so what
    /// it was told is what happened).
    pub(super) async fn announce(&mut self) {
        if let Some(session) = &self.plan.session {
            let (session_id, resumed, replayed) = (session.id.clone(), self.plan.resumed, self.plan.replayed);
            self.sink.emit(Event::Session { session_id, resumed, replayed }).await;
        }
    }

    /// The resumed chat was lost: plan a new one with the conversation replayed into it.
    pub(super) fn plan_replay(&mut self) {
        self.plan.prompt = self.engine.new_chat_prompt(&self.conversation, self.tools.set().is_some());
        self.plan.replayed = self.conversation.has_history() || self.plan.continuing;
        self.plan.chat = Chat::New;
        self.plan.resumed = false;
        self.describe_tools();
    }
}

impl Engine {
    /// Where the turn runs; in client-tools mode a private folder where none of the agent's own
    /// tools work.
    fn placement_of(&self, req: &TurnRequest, tools: ClientTools<'_>) -> Result<Placement> {
        let place = match tools.set() {
            Some(_) => {
                let place = self.config.tools_placement(req.workspace.as_deref())?;
                self.backend
                    .lock_down(&place.folder)
                    .map_err(|e| BridgeError::internal(format!("cannot prepare the private folder: {e}")))?;
                place
            }
            None => self.config.placement(req.workspace.as_deref(), req.mode)?,
        };
        if place.scratch {
            tracing::info!(turn = %req.turn_id, trusted = self.config.settings.workspace_trusted, "the turn runs in a private scratch folder");
        }
        Ok(place)
    }

    /// `client_tools`: the client's system prompt (which explains its tools) always goes in.
    fn new_chat_prompt(&self, conversation: &Conversation<'_>, client_tools: bool) -> String {
        let o = &self.config.settings;
        conversation.new_chat_prompt(o.replay_max_chars, o.send_system_messages || client_tools)
    }

    /// Which session and chat the turn meets, and what it says there.
    fn plan_chat(&self, req: &TurnRequest, conversation: &Conversation<'_>, place: &Placement) -> Result<Plan> {
        if req.utility {
            // Titles and progress messages: one shot, ask mode, no session touched.
            return Ok(Plan {
                session: None,
                chat: Chat::OneShot,
                resumed: false,
                replayed: false,
                prompt: conversation.utility_prompt(),
                mode: Mode::Ask,
                model: self.config.settings.utility_model.clone().unwrap_or_else(|| req.model.clone()),
                unattended: false,
                continuing: false,
            });
        }
        let workspace = place.folder.to_string_lossy().into_owned();
        // A tool round continues the chat that made the calls: it has seen every request.
        let continuing = req.tools.is_some() && conversation.pending_results().is_some();
        let (history, answers) = if continuing {
            (conversation.all_request_hashes(), conversation.all_answer_hashes())
        } else {
            (conversation.history_hashes(), conversation.answer_hashes())
        };
        let mut sessions = lock(&self.sessions);
        let found = sessions.find(&Lookup {
            conversation_id: req.conversation_id.as_deref(),
            session_id: req.session_id.as_deref(),
            mode: place.mode,
            workspace: &workspace,
            under: place.per_conversation,
            history: &history,
            answers: &answers,
        });
        let now = sessions.now_ms();
        drop(sessions);
        let (mode, model, unattended) = (place.mode, req.model.clone(), place.unattended);
        match found {
            Match::Resume { mut session, missing } => {
                // A session without a conversation id takes this one; one that has another keeps
                // it unless the client named the session itself (its marker survives a reload
                // that gave the chat a new id).
                let named = req.session_id.as_deref() == Some(session.id.as_str());
                if req.conversation_id.is_some() && (session.conversation_id.is_none() || named) {
                    session.conversation_id = req.conversation_id.clone();
                }
                let chat = Chat::Resume(session.chat_id.clone());
                let prompt = if continuing {
                    conversation.results_prompt(&session.calls)
                } else {
                    conversation.resume_prompt_with(missing)
                };
                Ok(Plan {
                    session: Some(session),
                    chat,
                    resumed: true,
                    replayed: false,
                    prompt,
                    mode,
                    model,
                    unattended,
                    continuing,
                })
            }
            found => {
                let session = match found {
                    Match::Diverged(s) => Session { requests: Vec::new(), answers: Vec::new(), ..s },
                    _ => self.new_session(req, place, workspace, now)?,
                };
                let replayed = conversation.has_history() || continuing;
                let prompt = self.new_chat_prompt(conversation, req.tools.is_some());
                Ok(Plan {
                    session: Some(session),
                    chat: Chat::New,
                    resumed: false,
                    replayed,
                    prompt,
                    mode,
                    model,
                    unattended,
                    continuing,
                })
            }
        }
    }

    /// A session of its own for a conversation no session matched; its chat comes with its
    /// first turn.
    fn new_session(&self, req: &TurnRequest, place: &Placement, workspace: String, now: u64) -> Result<Session> {
        Ok(Session {
            id: new_session_id(),
            chat_id: String::new(),
            conversation_id: req.conversation_id.clone(),
            mode: place.mode,
            model: req.model.clone(),
            workspace: if place.per_conversation {
                self.config.new_conversation_folder()?.to_string_lossy().into_owned()
            } else {
                workspace
            },
            requests: Vec::new(),
            answers: Vec::new(),
            attempted: Vec::new(),
            resume_failures: 0,
            turns: 0,
            created_ms: now,
            last_used_ms: now,
            tools: 0,
            // The store's, set when it is recorded.
            owner: String::new(),
            door: Default::default(),
            calls: Vec::new(),
        })
    }
}

/// Where the turn runs: with per-conversation folders, the session's own (made again if
/// something removed it).
fn conversation_folder(plan: &Plan, place: &Placement) -> Result<std::path::PathBuf> {
    match &plan.session {
        Some(session) if place.per_conversation => crate::util::fs::private_dir(Path::new(&session.workspace))
            .map_err(|e| BridgeError::internal(format!("cannot create the conversation's folder: {e}"))),
        _ => Ok(place.folder.clone()),
    }
}

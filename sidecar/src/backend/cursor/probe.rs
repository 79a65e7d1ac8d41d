//! `cursor-bridge doctor --probe`: a short scripted session against the person's real Cursor CLI
//! that checks what the bridge assumes about it (docs/cursor-cli.md §15 and docs/cursor-acp.md
//! §5 list what no document settled), in a private scratch folder of ours that only our MCP
//! server's tools may touch, in ask mode, with one tiny prompt per question that needs one, and
//! only after the person agreed to spend those requests. Each finding says what this build did
//! and what the bridge does about it; what can change the bridge's behaviour is kept for the
//! build (`probe_notes.rs`) and acted on by every backend from then on.
//!
//! The questions are each backend's: `acp/probe.rs` (start, catalogue, session tools, usage,
//! permission, load, cancel) and `print/probe.rs` (where print mode's chats are kept); `probing.rs` keeps
//! the findings. Like `auto.rs`, this file composes both backends on purpose.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use super::cli::CursorCli;
use super::print::CursorPrint;
use super::probe_notes::{Learnt, Notes};
use super::probing::{Asking, MOST_REQUESTS, QUESTIONS};
use super::{acp, print};
use crate::backend::contract::{
    AgentWords, Backend, BoxFuture, Located, TurnEnd, TurnFailure, TurnSpec, VersionCheck, Warm,
};
use crate::backend::events::EventSink;
use crate::backend::reports::{BackendStatus, CliStatus, ProbeFinding, ProbeOutcome, ProbePlan, ProbeReport};
use crate::error::BridgeError;
use crate::vocab::ModelInfo;

/// Probe the CLI `cli` finds; `print` runs print mode's question (the product's own backend).
async fn run(cli: &CursorCli, print_mode: &dyn Backend, notes: &Notes, plan: ProbePlan) -> ProbeReport {
    let words = &super::words::WORDS;
    let mut report = ProbeReport { agent: words.name.to_string(), ..ProbeReport::default() };
    let health = cli.health().await;
    report.version = health.version.clone();
    let command = match cli.find().await {
        Ok(command) => command,
        Err(e) => {
            report.findings = QUESTIONS
                .iter()
                .enumerate()
                .map(|(n, (id, question))| ProbeFinding {
                    id,
                    question: question.to_string(),
                    // The first question fails with the reason; the rest could not be asked.
                    outcome: if n == 0 { ProbeOutcome::Failed } else { ProbeOutcome::NotAsked },
                    observed: if n == 0 { e.message.clone() } else { "Not asked: no Cursor CLI.".into() },
                    bridge: if n == 0 { e.hint.clone().unwrap_or_default() } else { String::new() },
                    measured: Value::Null,
                })
                .collect();
            return report;
        }
    };
    let folders = Scratch::new(cli.neutral_dir(), true).and_then(|a| Ok((a, Scratch::new(cli.neutral_dir(), false)?)));
    let (scratch, shell_scratch) = match folders {
        Ok(both) => both,
        Err(e) => {
            report.findings.push(ProbeFinding {
                id: "acpStart",
                question: QUESTIONS[0].1.to_string(),
                outcome: ProbeOutcome::Failed,
                observed: format!("The probe could not make its scratch folder: {e}"),
                bridge: "Set CURSOR_BRIDGE_STATE_DIR to a folder you can write to.".into(),
                measured: Value::Null,
            });
            return report;
        }
    };
    let mut learnt = Learnt::new(&command, health.version.clone());
    let mut asking = Asking {
        cli,
        command: &command,
        scratch: &scratch.0,
        shell_scratch: &shell_scratch.0,
        plan,
        spent: 0,
        findings: Vec::new(),
    };
    tracing::info!(spend = plan.spend, "probing the Cursor CLI");
    acp::probe_questions(&mut asking, &mut learnt).await;
    print::probe_question(&mut asking, print_mode, &mut learnt).await;
    // In the order of the questions, whatever order they were answered in.
    asking.findings.sort_by_key(|f| QUESTIONS.iter().position(|(id, _)| *id == f.id));
    report.spent = asking.spent;
    report.findings = asking.findings;
    report.kept = notes.keep(learnt);
    report
}

/// A new private folder for one probe, removed when the probe ends; `locked`: locked down as
/// client-tools mode's are (only our MCP server's tools allowed).
struct Scratch(PathBuf);

impl Scratch {
    fn new(beside: &Path, locked: bool) -> std::io::Result<Scratch> {
        let parent = beside.parent().unwrap_or(beside);
        let dir = parent.join(format!("probe-{:016x}", crate::util::ids::random_u64()));
        std::fs::create_dir_all(&dir)?;
        let scratch = Scratch(dir);
        if locked {
            super::isolation::lock_down(&scratch.0)?;
        }
        Ok(scratch)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A Cursor backend that can also probe its program: every other call is the serving backend's
/// (every method of `Backend` is forwarded, defaults included: a test holds that).
pub struct Probing {
    serving: Arc<dyn Backend>,
    /// Runs print mode's question: the serving backend's own print mode, or one made for the probe.
    print: ProbePrint,
    cli: Arc<CursorCli>,
}

/// Where print mode's question runs.
pub enum ProbePrint {
    /// The serving backend's own print mode (`print`, `auto`): it shuts it down.
    Serving(Arc<CursorPrint>),
    /// One made for the probe, with nothing prepared ahead (`acp`): shut down here.
    Own(Arc<CursorPrint>),
}

impl Probing {
    pub fn new(serving: Arc<dyn Backend>, print: ProbePrint, cli: Arc<CursorCli>) -> Arc<Probing> {
        Arc::new(Probing { serving, print, cli })
    }

    fn print(&self) -> &CursorPrint {
        match &self.print {
            ProbePrint::Serving(p) | ProbePrint::Own(p) => p,
        }
    }
}

impl Backend for Probing {
    fn name(&self) -> &'static str {
        self.serving.name()
    }
    fn locate(&self) -> BoxFuture<'_, Result<Located, BridgeError>> {
        self.serving.locate()
    }
    fn list_models(&self) -> BoxFuture<'_, Result<Vec<ModelInfo>, BridgeError>> {
        self.serving.list_models()
    }
    fn run_turn<'a>(&'a self, turn: TurnSpec, sink: &'a mut EventSink) -> BoxFuture<'a, Result<TurnEnd, TurnFailure>> {
        self.serving.run_turn(turn, sink)
    }
    fn warm(&self, hint: Warm) {
        self.serving.warm(hint)
    }
    fn health(&self) -> BoxFuture<'_, CliStatus> {
        self.serving.health()
    }
    fn status(&self) -> BackendStatus {
        self.serving.status()
    }
    fn judge_version(&self, version: &str) -> VersionCheck {
        self.serving.judge_version(version)
    }
    fn words(&self) -> &'static AgentWords {
        self.serving.words()
    }
    fn hosts_tools(&self) -> bool {
        self.serving.hosts_tools()
    }
    fn takes_images(&self) -> bool {
        self.serving.takes_images()
    }
    fn silent_failure_loses(&self, chat: &str) -> bool {
        self.serving.silent_failure_loses(chat)
    }
    fn lock_down(&self, folder: &Path) -> std::io::Result<()> {
        self.serving.lock_down(folder)
    }
    fn probe(&self, plan: ProbePlan) -> BoxFuture<'_, ProbeReport> {
        Box::pin(run(&self.cli, self.print(), self.cli.notes(), plan))
    }
    fn probe_requests(&self) -> u32 {
        MOST_REQUESTS
    }
    fn shutdown(&self) {
        self.serving.shutdown();
        if let ProbePrint::Own(print) = &self.print {
            print.shutdown();
        }
    }
}

#[cfg(test)]
mod tests {
    /// The names of the functions a block of Rust source declares (`fn name(` / `fn name<`).
    fn functions(block: &str) -> Vec<String> {
        block
            .split("fn ")
            .skip(1)
            .filter_map(|rest| rest.split(['(', '<']).next())
            .map(|name| name.trim().to_owned())
            .filter(|name| !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_'))
            .collect()
    }

    /// A method added to `Backend` later, with a default, would otherwise answer with its default
    /// for every Cursor backend, silently.
    #[test]
    fn probing_forwards_every_method_of_backend() {
        let contract = include_str!("../contract.rs");
        let start = contract.find("pub trait Backend").expect("the trait");
        let end = start + contract[start..].find("\n}\n").expect("its end");
        let wanted = functions(&contract[start..end]);
        assert!(wanted.len() >= 12, "{wanted:?}");
        let this = include_str!("probe.rs");
        let start = this.find("impl Backend for Probing").expect("the impl");
        let end = start + this[start..].find("\n}\n").expect("its end");
        let forwarded = functions(&this[start..end]);
        let missing: Vec<&String> = wanted.iter().filter(|f| !forwarded.contains(f)).collect();
        assert!(missing.is_empty(), "Probing does not forward {missing:?}");
    }
}

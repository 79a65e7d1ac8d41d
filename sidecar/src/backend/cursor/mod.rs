//! The Cursor CLI (`cursor-agent` / `agent`): what both of its backends share — the program
//! itself (`cli`: found once, its environment, its model list and login), where it is
//! (`discovery`, `locate`), the environment of its children (`env`), its short subcommands
//! (`commands`), its model list (`models`, `sku`), its failure texts and the fixes it suggests (`failures`), the
//! builds known to work (`known_builds`) and a folder where it may run only the client's tools
//! (`isolation`) — with one folder per way of driving it: `print/` (a process per turn) and
//! `acp/` (its ACP mode, warm), and `auto.rs`, the policy that picks between the two per turn.
//! The two backend folders never import each other.

pub mod acp;
pub mod auto;
pub mod cli;
pub mod commands;
pub mod discovery;
pub mod env;
pub mod failures;
pub mod isolation;
pub mod known_builds;
pub mod locate;
pub mod models;
pub mod print;
mod probe;
pub mod probe_notes;
pub mod probing;
pub mod sku;
pub mod words;

use std::sync::Arc;

/// What the scripted test backend borrows to stand in for the Cursor backends: how a folder is
/// locked down for client-tools mode, and which CLI builds are known to work.
pub use isolation::lock_down;
pub use known_builds::check as check_build;
pub use words::WORDS;

use crate::backend::contract::{Backend, BackendSettings, Warmth};

/// Print mode: a CLI process per turn. Each backend here can also probe the program
/// (`doctor --probe`, `probe.rs`), print mode's question on a print backend of the same program.
pub fn print_backend(settings: &BackendSettings) -> Arc<dyn Backend> {
    let cli = cli::CursorCli::new(settings);
    let print = print::CursorPrint::new(settings, cli.clone());
    probe::Probing::new(print.clone(), probe::ProbePrint::Serving(print), cli)
}

/// ACP mode: warm `agent acp` sessions (a print backend of the same program runs only the
/// probe's print-mode question).
pub fn acp_backend(settings: &BackendSettings) -> Arc<dyn Backend> {
    let cli = cli::CursorCli::new(settings);
    let quiet = BackendSettings { warmth: Warmth { ahead: 0, ..settings.warmth.clone() }, ..settings.clone() };
    let print = print::CursorPrint::new(&quiet, cli.clone());
    probe::Probing::new(acp::backend(settings, cli.clone()), probe::ProbePrint::Own(print), cli)
}

/// `auto`: ACP with print mode as the fallback, both driving one program (one [`cli::CursorCli`]:
/// found once, one model list, one login check).
pub fn auto_backend(settings: &BackendSettings) -> Arc<dyn Backend> {
    let cli = cli::CursorCli::new(settings);
    let print = print::CursorPrint::new(settings, cli.clone());
    let acp = acp::backend(settings, cli.clone());
    probe::Probing::new(auto::Auto::new(print.clone(), acp), probe::ProbePrint::Serving(print), cli)
}

//! The Cursor CLI (`cursor-agent` / `agent`): what both of its backends share — where the program
//! is (`discovery`, `locate`), its short subcommands (`commands`), its model list (`models`,
//! `sku`), its failure texts (`failures`, `hints`), the builds known to work (`known_builds`) and a
//! folder where it may run only the client's tools (`isolation`) — with one folder per way of
//! driving it: `print/` (a process per turn) and `acp/` (its ACP mode, warm), and `auto.rs`, the
//! policy that picks between the two per turn.

pub mod acp;
pub mod auto;
pub mod commands;
pub mod discovery;
pub mod failures;
pub mod hints;
pub mod isolation;
pub mod known_builds;
pub mod locate;
pub mod models;
pub mod print;
pub mod sku;

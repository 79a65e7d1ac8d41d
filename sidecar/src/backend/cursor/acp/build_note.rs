//! What the backend learnt about one CLI build (ACP does not start with it; its sessions ignore
//! the client's MCP servers), kept for a while: a note holds for the build it was taken on, until
//! `REPROBE_AFTER` has passed, so an updated CLI, or the same one later, is tried again.

use std::sync::Mutex;

use tokio::time::Instant;

use super::REPROBE_AFTER;
use crate::backend::cursor::discovery::CliCommand;
use crate::util::sync::lock;

pub struct BuildNote<T> {
    note: Mutex<Option<(String, Instant, T)>>,
}

impl<T: Clone> BuildNote<T> {
    pub fn new() -> Self {
        BuildNote { note: Mutex::new(None) }
    }

    /// Notes `what` for `cli`'s build (replacing a note on any build).
    pub fn note(&self, cli: &CliCommand, what: T) {
        *lock(&self.note) = Some((cli.build_id(), Instant::now(), what));
    }

    /// Drops the note (what it said no longer holds: ACP started after all).
    pub fn forget(&self) {
        lock(&self.note).take();
    }

    /// The note, while it holds for `cli`'s build.
    pub fn get(&self, cli: &CliCommand) -> Option<T> {
        match &*lock(&self.note) {
            Some((build, since, what)) if *build == cli.build_id() && since.elapsed() < REPROBE_AFTER => {
                Some(what.clone())
            }
            _ => None,
        }
    }
}

//! The registry: which children are ours, what each is doing, and which orphans belong to them.
//! The sweep (`sweep.rs`) decides by it; spawning registers a child under its lock.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use super::table::Proc;

/// What a registered child is doing, for the orphan sweep.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Role {
    /// Running a turn or a command: its processes, and orphans it may own, are left alone.
    Busy,
    /// A warm spare waiting for its prompt: it owns its own group, nothing more.
    Standby,
    /// Killed by a drop and waiting to be reaped by tokio: owns nothing, but the sweep must not
    /// reap it behind tokio's back.
    Released,
}

/// The children started through [`spawn`](super::spawn) and the orphans attributed to them. Anything else that
/// is our child is an orphan we adopted as subreaper (a grandchild that outlived its parent).
#[derive(Default)]
#[cfg_attr(not(unix), allow(dead_code))]
pub(super) struct Registry {
    pub(super) children: HashMap<u32, (u64, Role)>,
    /// Orphans a sweep attributed to a running child (by leader pid); killed when it ends.
    pub(super) adopted: HashMap<u32, Vec<Proc>>,
    /// A sweep left an escapee alone because a child was busy: sweep again once none is.
    pub(super) deferred: bool,
    /// The sidecar is stopping: every orphan dies, whoever it belongs to.
    pub(super) stopping: bool,
}

impl Registry {
    pub(super) fn busy(&self) -> bool {
        self.children.values().any(|(_, role)| *role == Role::Busy)
    }
}

pub(super) fn registry() -> std::sync::MutexGuard<'static, Registry> {
    static REGISTRY: OnceLock<Mutex<Registry>> = OnceLock::new();
    crate::util::sync::lock(REGISTRY.get_or_init(Default::default))
}

/// How many children started through [`spawn`](super::spawn) are alive (for `status` and tests).
pub fn live_children() -> usize {
    registry().children.values().filter(|(_, role)| *role != Role::Released).count()
}

//! Orphans: the sidecar is a child subreaper (Linux), so what a turn's shell left running when it
//! exited is re-parented to us. A sweep attributes each orphan to the running child that may own
//! it, or kills and reaps it; a shutdown sweeps until none is left ([`end_orphans`]).

use std::collections::HashMap;
use std::time::Duration;

use super::registry::{registry, Registry, Role};
use super::signal::{signal_seen, Signal};
use super::table::{descendants_in, Proc};
#[cfg(unix)]
use super::table::{own_children, proc_table};

/// The last busy child is done and a sweep had to leave an escapee alone: sweep now (on the
/// blocking pool; the sweep starts no process).
pub(super) fn sweep_if_deferred(mut registry: std::sync::MutexGuard<'static, Registry>) {
    let due = registry.deferred && !registry.busy();
    if due {
        registry.deferred = false;
    }
    drop(registry);
    if due {
        sweep_in_background();
    }
}

pub(super) fn sweep_in_background() {
    match tokio::runtime::Handle::try_current() {
        Ok(runtime) => drop(runtime.spawn_blocking(sweep_orphans)),
        Err(_) => {
            sweep_orphans();
        }
    }
}

/// Make this process a child subreaper (Linux), so grandchildren whose parent died are re-parented
/// to us instead of init, where [`sweep_orphans`] can kill and reap them.
pub fn become_subreaper() {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl(PR_SET_CHILD_SUBREAPER, 1) only sets a flag on this process.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    }
}

/// Who may own an orphan: the groups of registered children (busy or standby) and of their live
/// descendants, and the sessions of busy ones and their live descendants — except the sidecar's
/// own session, which every child shares and which therefore says nothing about whose it is.
// Windows sweeps nothing (the job holds the tree), so the sweep's helpers go unused there.
#[cfg_attr(not(unix), allow(dead_code))]
fn owners(registry: &Registry, table: &[Proc], own_session: Option<u32>) -> (HashMap<u32, u32>, HashMap<u32, u32>) {
    let (mut groups, mut sessions) = (HashMap::new(), HashMap::new());
    for (&leader, &(_, role)) in &registry.children {
        if role == Role::Released {
            continue;
        }
        let me = table.iter().find(|p| p.pid == leader).copied();
        for p in me.into_iter().chain(descendants_in(table, leader)) {
            groups.entry(p.pgid).or_insert(leader);
            if role == Role::Busy && Some(p.sid) != own_session {
                sessions.entry(p.sid).or_insert(leader);
            }
        }
    }
    (groups, sessions)
}

/// Kill and reap the orphans (children of ours that [`spawn`](super::spawn) did not start) no running child can
/// own. An orphan in the process group of a registered child, or of one of its live descendants,
/// or in the session of a busy one (other than ours), belongs to that child: it is left alone,
/// remembered, and killed when that child ends. An escapee nobody can be named for is killed only
/// when no child is busy (it may be a running turn's): then the sweep runs again as soon as the
/// last busy child is done. Once the sidecar is [`stopping`], every orphan dies. Zombies are
/// reaped. Returns how many it killed or reaped.
pub fn sweep_orphans() -> usize {
    #[cfg(unix)]
    {
        let me = std::process::id();
        // Every turn's end sweeps, and reading the whole table costs a read of every process on
        // the machine (milliseconds of a core, more on a busy one, next to the next turn's
        // start-up). An orphan is a child of ours that is not registered: when the kernel's lists
        // of our children name none, there is nothing to do.
        if let Some(children) = own_children() {
            let registry = registry();
            if children.iter().all(|pid| registry.children.contains_key(pid)) {
                return 0;
            }
        }
        // Read /proc before taking the lock (a scan takes milliseconds, and a turn's spawn waits
        // for the lock): a child that is not in this snapshot is not considered at all, and one
        // that is was registered by the time we hold the lock (spawn registers it under the lock
        // it already held while forking). Decide and kill under the lock; reap after it.
        let table = proc_table();
        let ended: Vec<u32> = {
            let mut registry = registry();
            let orphans: Vec<Proc> =
                table.iter().filter(|p| p.ppid == me && !registry.children.contains_key(&p.pid)).copied().collect();
            if orphans.is_empty() {
                return 0;
            }
            let own_session = table.iter().find(|p| p.pid == me).map(|p| p.sid);
            let (groups, sessions) = owners(&registry, &table, own_session);
            let (busy, stopping) = (registry.busy(), registry.stopping);
            let mut ended = Vec::new();
            for orphan in orphans {
                if orphan.state == 'Z' {
                    ended.push(orphan.pid);
                } else if stopping {
                    kill_orphan_tree(&table, &orphan);
                    ended.push(orphan.pid);
                } else if let Some(&leader) = groups.get(&orphan.pgid).or_else(|| sessions.get(&orphan.sid)) {
                    let adopted = registry.adopted.entry(leader).or_default();
                    if !adopted.contains(&orphan) {
                        adopted.push(orphan);
                    }
                } else if busy {
                    registry.deferred = true;
                } else {
                    kill_orphan_tree(&table, &orphan);
                    ended.push(orphan.pid);
                }
            }
            ended
        };
        for pid in &ended {
            // SAFETY: waitpid on a specific pid that is our child and not owned by tokio.
            unsafe {
                let mut status = 0;
                // A just-killed process may need a moment to become a zombie.
                for _ in 0..50 {
                    if libc::waitpid(*pid as i32, &mut status, libc::WNOHANG) != 0 {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(2));
                }
            }
        }
        ended.len()
    }
    #[cfg(not(unix))]
    {
        0
    }
}

/// SIGKILL an orphan seen earlier and its descendants in `table`, if it is still that process.
pub(super) fn kill_orphan_tree(table: &[Proc], orphan: &Proc) {
    if !table.iter().any(|p| p.pid == orphan.pid && p.start == orphan.start) {
        return; // gone, and its pid maybe someone else's
    }
    for d in descendants_in(table, orphan.pid) {
        signal_seen(&d, Signal::Kill);
    }
    signal_seen(orphan, Signal::Kill);
}

/// The sidecar is stopping (the backend shuts down): from now on a sweep kills every orphan, also
/// those a running turn owns — running turns are being stopped too, and a turn stuck past the
/// runtime's shutdown must not leave its tools behind.
pub fn stopping() {
    registry().stopping = true;
}

/// How long a shutdown waits for the last orphans to end and be reaped.
pub const STOP_ORPHANS_WITHIN: Duration = Duration::from_secs(2);

/// The backend shuts down: mark the sidecar [`stopping`], then sweep until no orphan is left and
/// every killed child is reaped, or `within` has passed. One sweep is not enough on a loaded
/// machine: the members of a group killed a moment earlier (an agent's shell, a turn's tools) may
/// die only after the sweep read the table, and then, their leader reaped, become zombies of
/// ours that nothing reaps until the sidecar exits (the fault matrix saw one under CI's load).
pub fn end_orphans(within: Duration) {
    stopping();
    // Killed leaders are reaped by tasks this thread may just have spawned: on a worker of the
    // multi-thread runtime they sit in its own slot, which no other worker takes, until this
    // returns. Hand the worker over while we wait.
    let on_worker = tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
    if on_worker {
        tokio::task::block_in_place(|| settle(within));
    } else {
        settle(within);
    }
}

fn settle(within: Duration) {
    let deadline = std::time::Instant::now() + within;
    loop {
        let swept = sweep_orphans();
        let left = unsettled();
        if swept == 0 && left.is_empty() {
            return;
        }
        if std::time::Instant::now() >= deadline {
            tracing::warn!(
                ?left,
                "orphans or killed children still there {} ms after shutdown began",
                within.as_millis()
            );
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The children of ours that are orphans (one [`spawn`](super::spawn) did not start, or its zombie) or killed
/// children not yet reaped (whose group-mates may still become orphans), with their role.
fn unsettled() -> Vec<(u32, Option<Role>)> {
    #[cfg(unix)]
    {
        let me = std::process::id();
        let registry = registry();
        let children =
            own_children().unwrap_or_else(|| proc_table().iter().filter(|p| p.ppid == me).map(|p| p.pid).collect());
        children
            .into_iter()
            .map(|pid| (pid, registry.children.get(&pid).map(|(_, role)| *role)))
            .filter(|(_, role)| role.is_none_or(|r| r == Role::Released))
            .collect()
    }
    #[cfg(not(unix))]
    {
        Vec::new()
    }
}

/// Linux only: orphans are re-parented to a subreaper; macOS has none (docs/platforms.md).
#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use crate::backend::process::spawn;
    use crate::backend::process::tests::{alive, child_with_an_orphaned_job, gone_within, sh};

    /// The sweep's first look: the kernel's lists of our children name what we started (a sweep
    /// that found none there would skip the orphans it must end).
    #[tokio::test]
    async fn own_children_are_listed() {
        let child = spawn(&sh("sleep 5")).unwrap();
        let listed = own_children().expect("this kernel keeps children lists");
        assert!(listed.contains(&child.pid()), "{} not in {listed:?}", child.pid());
    }

    #[tokio::test]
    async fn a_sweep_leaves_a_running_childs_orphans_and_its_end_kills_them() {
        let (mut child, job) = child_with_an_orphaned_job().await;
        sweep_orphans();
        assert!(alive(job), "the sweep killed the background job of a running child");
        // Another child dropped (a cancelled turn, an expired spare) sweeps too.
        drop(spawn(&sh("sleep 30")).unwrap());
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(alive(job), "a dropped child's sweep killed another child's background job");
        child.terminate(Duration::from_millis(100)).await;
        assert!(gone_within(job, Duration::from_secs(2)).await, "the job outlived its child");
    }
}

//! `doctor` is the engine's, the words are the agent's: every check names the agent, its
//! commands and its fixes as the backend says them, so another agent's report says nothing of
//! Cursor's CLI.

use super::*;
use crate::backend::{AgentWords, CliStatus};

pub(super) static OTHER: AgentWords = AgentWords {
    name: "Other CLI",
    vendor: "Other",
    not_found: "The Other CLI (`other`) was not found.",
    install_fix: "Install Other: see other.example.",
    update_fix: "Run `other upgrade`.",
    version_command: "other -V",
    no_version_fix: "Run `other -V`.",
    not_this_agent_fix: "Check that the configured path is Other's `other`.",
    status_command: "other whoami",
    unknown_login_fix: "Run `other whoami`.",
    login_fix: "Run `other auth`.",
    backends: &[("scripted", "Other's scripted mode")],
};

fn text_of(report: &crate::engine::doctor::Report) -> String {
    let mut all = String::new();
    for c in &report.checks {
        for part in [Some(&c.title), Some(&c.summary), c.fix.as_ref(), c.detail.as_ref()].into_iter().flatten() {
            all.push_str(part);
            all.push('\n');
        }
    }
    all
}

fn check<'a>(report: &'a crate::engine::doctor::Report, id: &str) -> &'a crate::engine::doctor::Check {
    report.checks.iter().find(|c| c.id == id).unwrap_or_else(|| panic!("no `{id}` check in {report:?}"))
}

#[tokio::test(start_paused = true)]
async fn every_check_speaks_of_the_agent_in_the_backends_words() {
    let cases = [
        (
            "found, a version it does not know",
            None,
            "cliVersion",
            "`scripted` is not a Other CLI version",
            OTHER.not_this_agent_fix,
        ),
        (
            "not found",
            Some(CliStatus { found: false, ..CliStatus::default() }),
            "cli",
            OTHER.not_found,
            OTHER.install_fix,
        ),
        (
            "no version printed",
            Some(CliStatus { found: true, path: Some("/o".into()), logged_in: Some(true), ..CliStatus::default() }),
            "cliVersion",
            "`other -V` printed no version.",
            OTHER.no_version_fix,
        ),
        (
            "logged out",
            Some(CliStatus { found: true, path: Some("/o".into()), logged_in: Some(false), ..CliStatus::default() }),
            "login",
            "Not logged in",
            OTHER.login_fix,
        ),
        (
            "login unknown",
            Some(CliStatus { found: true, path: Some("/o".into()), ..CliStatus::default() }),
            "login",
            "`other whoami` did not say",
            OTHER.unknown_login_fix,
        ),
    ];
    for (case, health, id, summary, fix) in cases {
        let h = Harness::new(Settings::default());
        *crate::util::sync::lock(&h.backend.words) = Some(&OTHER);
        *crate::util::sync::lock(&h.backend.health) = health;
        let report = h.engine.doctor().await;
        let c = check(&report, id);
        assert!(c.summary.contains(summary), "{case}: {c:?}");
        assert_eq!(c.fix.as_deref(), Some(fix), "{case}: {c:?}");
        let text = text_of(&report);
        for cursors in ["Cursor CLI", "Cursor login", "`agent", "cursor.com", "Cursor's"] {
            assert!(!text.contains(cursors), "{case}: another agent's report says {cursors:?}:\n{text}");
        }
        assert!(text.contains("Other CLI"), "{case}:\n{text}");
    }
}

/// A key in the agent's environment is the backend's to see; the engine only reads the report.
#[tokio::test(start_paused = true)]
async fn a_key_the_backend_found_in_the_environment_stands_in_for_a_login() {
    let h = Harness::new(Settings::default());
    *crate::util::sync::lock(&h.backend.health) = Some(CliStatus {
        found: true,
        path: Some("/o".into()),
        logged_in: Some(false),
        key_in_environment: true,
        ..CliStatus::default()
    });
    let report = h.engine.doctor().await;
    assert_eq!(check(&report, "login").summary, "A Cursor API key is set.", "{report:?}");
    assert_eq!(check(&report, "login").status, crate::engine::doctor::CheckStatus::Ok);
}

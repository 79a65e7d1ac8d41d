//! `cursor-bridge doctor --json` (and the stdio `doctor` method) against the CLI double: every
//! check carries a status, a problem carries a fix, and exactly the check at fault fails when the
//! CLI is missing, logged out or too old.

use std::process::Command;

use serde_json::{json, Value};

use crate::support::*;
use cursor_bridge_test_client::initialize_params;

/// `cursor-bridge doctor --json <args>` with nothing of this machine's Cursor set-up in reach.
fn doctor(dir: &TestDir, args: &[&str], env: &[(&str, &str)]) -> (i32, Value) {
    let out = doctor_raw(dir, &[&["--json"], args].concat(), env);
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("doctor --json printed no JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)));
    (out.status.code().unwrap_or(-1), report)
}

/// `cursor-bridge doctor <args>` in `dir`'s workspace, nothing of this machine's set-up in reach.
pub(crate) fn doctor_raw(dir: &TestDir, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = Command::new(sidecar_exe());
    cmd.arg("doctor")
        .args(args)
        .arg("--workspace")
        .arg(dir.workspace())
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", dir.path())
        .env("CURSOR_BRIDGE_STATE_DIR", dir.path().join("state"))
        .env("CURSOR_BRIDGE_LOG_DIR", dir.log_dir())
        .env("CURSOR_DOUBLE_RECORD", dir.record_file());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let child = cmd.stdin(std::process::Stdio::null()).output().expect("run cursor-bridge doctor");
    child
}

fn statuses(report: &Value) -> Vec<(String, String)> {
    report["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .map(|c| (c["id"].as_str().unwrap().to_string(), c["status"].as_str().unwrap().to_string()))
        .collect()
}

fn check<'a>(report: &'a Value, id: &str) -> &'a Value {
    report["checks"].as_array().unwrap().iter().find(|c| c["id"] == id).unwrap_or_else(|| panic!("no {id} check"))
}

/// The ids that failed.
fn failed(report: &Value) -> Vec<String> {
    statuses(report).into_iter().filter(|(_, s)| s == "fail").map(|(id, _)| id).collect()
}

/// Every check has a title, a known status and a summary; every failure and warning says how to fix it.
fn well_formed(report: &Value) {
    let ids: Vec<String> = statuses(report).into_iter().map(|(id, _)| id).collect();
    assert_eq!(ids, ["cli", "cliVersion", "login", "models", "workspaceTrust", "backend", "stateFolder"], "{report:#}");
    for c in report["checks"].as_array().unwrap() {
        assert!(["ok", "warn", "fail", "info"].contains(&c["status"].as_str().unwrap()), "{c}");
        assert!(!c["title"].as_str().unwrap().is_empty() && !c["summary"].as_str().unwrap().is_empty(), "{c}");
        if c["status"] == "fail" || c["status"] == "warn" {
            assert!(c["fix"].as_str().is_some_and(|f| !f.is_empty()), "a problem without a fix: {c}");
        }
    }
    assert_eq!(report["ok"], failed(report).is_empty(), "{report:#}");
}

fn double() -> String {
    double_exe().display().to_string()
}

#[test]
fn a_working_setup_passes_every_check() {
    let dir = TestDir::new();
    let (code, report) = doctor(&dir, &["--cli-path", &double()], &[]);
    well_formed(&report);
    assert_eq!((code, failed(&report)), (0, vec![]), "{report:#}");
    assert_eq!(check(&report, "cli")["summary"], format!("Found at {}.", double()));
    assert!(check(&report, "cliVersion")["summary"].as_str().unwrap().starts_with("2026.09.28-64d2043: known to work"));
    assert_eq!(check(&report, "login")["summary"], "Logged in as test@example.com.");
    // The double's list: 10 SKUs (one printed twice), composer-2.5 and its -fast variant one base.
    assert_eq!(check(&report, "models")["summary"], "10 models (9 base models); default: auto.");
    let backend = check(&report, "backend")["summary"].as_str().unwrap().to_owned();
    assert!(backend.contains("ACP mode") && backend.contains("`auto`"), "{backend}");
    assert_eq!(check(&report, "workspaceTrust")["status"], "ok");
    assert_eq!(check(&report, "stateFolder")["status"], "ok");
    // The CLI was really asked: version, login, models.
    let asked: Vec<String> = dir.records().iter().map(|r| r["subcommand"].as_str().unwrap_or("").to_string()).collect();
    for sub in ["version", "status", "models"] {
        assert!(asked.iter().any(|s| s == sub), "the CLI was not asked `{sub}`: {asked:?}");
    }
}

#[test]
fn a_missing_cli_fails_the_cli_check_and_says_how_to_install_it() {
    let dir = TestDir::new();
    // A configured path that is not there, and nothing on PATH: (arguments, what the fix says).
    let cases =
        [(vec!["--cli-path", "/nonexistent/cursor-agent"], "cliPath"), (vec![], "curl https://cursor.com/install")];
    for (args, fix_says) in cases {
        let (code, report) = doctor(&dir, &args, &[]);
        well_formed(&report);
        assert_eq!((code, failed(&report)), (1, vec!["cli".to_string()]), "{args:?}: {report:#}");
        let fix = check(&report, "cli")["fix"].as_str().unwrap();
        assert!(fix.contains(fix_says), "{args:?}: {fix}");
        for id in ["cliVersion", "login", "models"] {
            assert_eq!(check(&report, id)["summary"], "Not checked: no Cursor CLI.", "{id}");
        }
    }
}

/// (arguments, environment, the setting named, the path named)
type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], &'a str, &'a str);

/// A configured CLI path that points at nothing: the failing check names the setting (or the
/// variable) and the path it tried, so the fix is the setting, not a reinstall.
#[test]
fn a_configured_cli_path_that_points_at_nothing_is_named_with_the_path_it_tried() {
    let dir = TestDir::new();
    let cases: [Case; 2] = [
        (
            &["--cli-path", "/nonexistent/setting/cursor-agent"],
            &[],
            "cursorBridge.cliPath",
            "/nonexistent/setting/cursor-agent",
        ),
        (
            &[],
            &[("CURSOR_BRIDGE_CLI_PATH", "/nonexistent/env/agent")],
            "CURSOR_BRIDGE_CLI_PATH",
            "/nonexistent/env/agent",
        ),
    ];
    for (args, env, setting, path) in cases {
        let (code, report) = doctor(&dir, args, env);
        well_formed(&report);
        assert_eq!((code, failed(&report)), (1, vec!["cli".to_string()]), "{args:?} {env:?}: {report:#}");
        let cli = check(&report, "cli");
        let summary = cli["summary"].as_str().unwrap();
        assert!(summary.contains(setting) && summary.contains(path), "{summary}");
        assert!(cli["fix"].as_str().unwrap().contains(setting), "{cli}");
    }
    // Check Setup: the editor's `cliPath` (the `cursorBridge.cliPath` setting) through the stdio door.
    let mut sidecar = Sidecar::start(&dir);
    let params = initialize_params(("tests", "0"), &dir.workspace(), "/nonexistent/editor/agent".as_ref(), json!({}));
    sidecar.initialize_with(params);
    let response = sidecar.request("doctor", json!({}));
    let cli = check(&response["result"], "cli");
    let summary = cli["summary"].as_str().unwrap();
    assert!(summary.contains("cursorBridge.cliPath") && summary.contains("/nonexistent/editor/agent"), "{cli}");
}

#[test]
fn a_logged_out_cli_fails_the_login_check_unless_a_key_is_set() {
    let dir = TestDir::new();
    let (code, report) = doctor(&dir, &["--cli-path", &double()], &[("CURSOR_DOUBLE_LOGGED_IN", "0")]);
    well_formed(&report);
    assert_eq!((code, failed(&report)), (1, vec!["login".to_string()]), "{report:#}");
    assert!(check(&report, "login")["fix"].as_str().unwrap().contains("agent login"));
    assert_eq!(check(&report, "models")["summary"], "Not checked: not logged in.");

    // A key counts as a login (the CLI's `status` only knows stored logins).
    let env = [("CURSOR_DOUBLE_LOGGED_IN", "0"), ("CURSOR_API_KEY", "key-for-the-double")];
    let (code, report) = doctor(&dir, &["--cli-path", &double()], &env);
    well_formed(&report);
    assert_eq!((code, failed(&report)), (0, vec![]), "{report:#}");
    assert_eq!(check(&report, "login")["summary"], "A Cursor API key is set.");
}

#[test]
fn a_too_old_cli_fails_the_version_check_and_says_to_update() {
    let dir = TestDir::new();
    let (code, report) = doctor(&dir, &["--cli-path", &double()], &[("CURSOR_DOUBLE_VERSION", "2025.09.18-7ae6800")]);
    well_formed(&report);
    assert_eq!((code, failed(&report)), (1, vec!["cliVersion".to_string()]), "{report:#}");
    let c = check(&report, "cliVersion");
    assert_eq!(c["summary"], "2025.09.18-7ae6800 is too old: the bridge needs 2026.06.15 or newer.");
    assert!(c["fix"].as_str().unwrap().contains("agent update"));

    // Newer than anything checked is not a failure.
    let (code, report) = doctor(&dir, &["--cli-path", &double()], &[("CURSOR_DOUBLE_VERSION", "2027.01.05-abcdef0")]);
    assert_eq!((code, failed(&report)), (0, vec![]), "{report:#}");
    assert!(check(&report, "cliVersion")["summary"].as_str().unwrap().contains("newer than any build checked"));
}

#[test]
fn an_untrusted_workspace_is_a_warning_with_its_fix() {
    let dir = TestDir::new();
    let (code, report) = doctor(&dir, &["--cli-path", &double(), "--untrusted"], &[]);
    well_formed(&report);
    assert_eq!(code, 0);
    assert_eq!(check(&report, "workspaceTrust")["status"], "warn");
    assert!(check(&report, "workspaceTrust")["fix"].as_str().unwrap().contains("Manage Workspace Trust"));
}

#[test]
fn the_text_report_names_each_problem_and_its_fix() {
    let dir = TestDir::new();
    let out = doctor_raw(&dir, &["--cli-path", &double()], &[("CURSOR_DOUBLE_LOGGED_IN", "0")]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("FAIL  Cursor login: Not logged in, and no API key is set."), "{text}");
    assert!(text.contains("      fix: Run `agent login`"), "{text}");
    assert!(text.contains("ok    Cursor CLI: Found at"), "{text}");
    assert!(text.contains("1 check(s) failed"), "{text}");
    let bad = doctor_raw(&dir, &["--frobnicate"], &[]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown option `--frobnicate`"));
}

#[test]
fn the_doctor_method_reports_the_editors_trust_and_the_same_checks() {
    let dir = TestDir::new();
    let mut sidecar = Launch::new(&dir).env("CURSOR_DOUBLE_LOGGED_IN", "0").start();
    sidecar.initialize(&dir, json!({"workspaceTrusted": false}));
    let response = sidecar.request("doctor", json!({}));
    let report = &response["result"];
    well_formed(report);
    assert_eq!(failed(report), ["login"], "{report:#}");
    assert_eq!(check(report, "workspaceTrust")["status"], "warn");
    assert_eq!(report["ok"], false);
}

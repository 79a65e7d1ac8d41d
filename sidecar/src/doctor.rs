//! `cursor-bridge doctor`: the set-up checks of `engine/doctor.rs`, run from a terminal, as text
//! for a person (each check with its fix) or `--json` for tools (the `doctor` method's result,
//! protocol.md). Exit status 0 when no check failed, 1 when one did, 2 for bad arguments.

use std::path::PathBuf;

use crate::backend::select;
use crate::backend::ProbePlan;
use crate::engine::Config;
use crate::protocol::{CheckStatus, DoctorResult, Options, ProbeOutcome, ProbeResult};
use crate::startup;
use crate::translate;

pub const USAGE: &str = "\
Usage: cursor-bridge doctor [--json] [--cli-path PATH] [--workspace DIR] [--untrusted]
       cursor-bridge doctor --probe [--yes] [--json] [--cli-path PATH]

Checks what Cursor models need, and says how to fix what is missing: the Cursor CLI (path,
version), its login or an API key, the model list, the workspace trust, the backend that will
serve, and the state folder. Exit status: 0 when no check failed, 1 when one did.

Options:
  --json            the report as JSON (protocol.md, method `doctor`)
  --cli-path PATH   the Cursor CLI to check (else CURSOR_BRIDGE_CLI_PATH, then PATH)
  --workspace DIR   the folder turns would run in (default: the current folder)
  --untrusted       check as an untrusted (Restricted Mode) workspace
  --probe           check the bridge's assumptions against this Cursor CLI build with a short
                    scripted session in a private scratch folder (ask mode, an MCP tool of ours
                    that only echoes), and keep what it learnt for the build; the report says,
                    for each assumption, what this build did and what the bridge does about it
  --yes             let the probe spend up to 4 requests of your Cursor plan (tiny prompts);
                    without it a terminal is asked, and elsewhere only the questions that send
                    no prompt are asked
";

#[derive(Debug, Default, PartialEq)]
struct Args {
    json: bool,
    cli_path: Option<String>,
    workspace: Option<PathBuf>,
    untrusted: bool,
    probe: bool,
    yes: bool,
}

fn parse(args: &[String]) -> Result<Args, String> {
    let mut out = Args::default();
    crate::util::args::each_option(args, |name, value| {
        match name {
            "--json" => out.json = true,
            "--untrusted" => out.untrusted = true,
            "--probe" => out.probe = true,
            "--yes" => out.yes = true,
            "--cli-path" => out.cli_path = Some(value()?),
            "--workspace" => out.workspace = Some(PathBuf::from(value()?)),
            other => return Err(format!("unknown option `{other}`")),
        }
        Ok(())
    })?;
    Ok(out)
}

pub fn main(args: &[String]) -> i32 {
    if args.iter().any(|a| a == "--help" || a == "-h") {
        print!("{USAGE}");
        return 0;
    }
    let args = match parse(args) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("cursor-bridge doctor: {e}\n\n{USAGE}");
            return 2;
        }
    };
    let workspace = match args.workspace.clone().map_or_else(std::env::current_dir, Ok) {
        Ok(dir) if dir.is_dir() => dir,
        _ => {
            eprintln!("cursor-bridge doctor: the workspace is not a folder");
            return 2;
        }
    };
    if args.yes && !args.probe {
        eprintln!("cursor-bridge doctor: `--yes` is for `--probe`\n\n{USAGE}");
        return 2;
    }
    let started = match startup::start() {
        Ok(s) => s,
        Err(code) => return code,
    };
    let options = Options { workspace_trusted: !args.untrusted, ..Options::default() };
    let report = started.runtime.block_on(async {
        let config =
            Config::new(translate::engine_settings(&options), vec![workspace], started.paths.state_dir.clone())?;
        let settings = translate::backend_settings(args.cli_path.clone(), None, &options);
        let engine = startup::engine(config, settings, select::backend)?;
        let report = if args.probe {
            let spend = args.yes || ask_to_spend(engine.probe_requests());
            Report::Probe(translate::probe(engine.probe(ProbePlan { spend }).await))
        } else {
            Report::Doctor(translate::doctor(engine.doctor().await))
        };
        engine.shutdown();
        Ok::<_, crate::error::BridgeError>(report)
    });
    let code = match report {
        Ok(Report::Probe(report)) => {
            show(args.json, &report, probe_text);
            i32::from(report.findings.iter().any(|f| f.outcome == ProbeOutcome::Failed))
        }
        Ok(Report::Doctor(report)) => {
            show(args.json, &report, text);
            i32::from(!report.ok)
        }
        Err(e) => {
            eprintln!("cursor-bridge doctor: {e}");
            1
        }
    };
    started.finish(code)
}

/// A report on stdout: as JSON, or as text for a person.
fn show<R: serde::Serialize>(json: bool, report: &R, text: fn(&R) -> String) {
    if !json {
        print!("{}", text(report));
        return;
    }
    match serde_json::to_string_pretty(report) {
        Ok(json) => println!("{json}"),
        Err(e) => eprintln!("cursor-bridge doctor: {e}"),
    }
}

enum Report {
    Doctor(DoctorResult),
    Probe(ProbeResult),
}

/// Asks on the terminal before the probe spends requests; elsewhere (a pipe, CI) the answer is
/// no, and only the questions that send no prompt are asked.
fn ask_to_spend(most: u32) -> bool {
    use std::io::{BufRead, IsTerminal, Write};
    if !std::io::stdin().is_terminal() {
        eprintln!(
            "cursor-bridge doctor: not asking the questions that send a prompt (no terminal to agree on; `--yes` agrees)"
        );
        return false;
    }
    eprint!(
        "The probe sends up to {} tiny prompts to Cursor (ask mode, in a private scratch folder), which count \
         as requests of your plan. Go on with them? [y/N] ",
        most
    );
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    let _ = std::io::stdin().lock().read_line(&mut line);
    matches!(line.trim(), "y" | "Y" | "yes" | "Yes")
}

/// The probe's report for a terminal: each assumption, what this build did, what the bridge does.
pub fn probe_text(report: &ProbeResult) -> String {
    let version = report.version.as_deref().unwrap_or("version unknown");
    let mut out = format!("cursor-bridge doctor --probe: {} ({version})\n\n", report.agent);
    for f in &report.findings {
        let mark = match f.outcome {
            ProbeOutcome::AsAssumed => "ok   ",
            ProbeOutcome::Differs => "DIFF ",
            ProbeOutcome::Failed => "FAIL ",
            ProbeOutcome::NotAsked => "-    ",
        };
        out.push_str(&format!("{mark} {}\n      {}\n", f.question, f.observed));
        if !f.bridge.is_empty() {
            out.push_str(&format!("      bridge: {}\n", f.bridge));
        }
    }
    out.push_str(&format!(
        "\n{} request(s) of your plan spent. {}\n",
        report.spent,
        if report.kept {
            "What was learnt is kept for this CLI build; the bridge acts on it until the CLI updates."
        } else {
            "Nothing was kept (no state folder)."
        }
    ));
    out.push_str("`--json` prints this report for a bug report (no prompts, keys or paths of yours in it).\n");
    out
}

/// The report for a terminal: one line per check, its fix indented below it.
pub fn text(report: &DoctorResult) -> String {
    let mut out = String::from("cursor-bridge doctor\n\n");
    for c in &report.checks {
        let mark = match c.status {
            CheckStatus::Ok => "ok  ",
            CheckStatus::Warn => "warn",
            CheckStatus::Fail => "FAIL",
            CheckStatus::Info => "info",
        };
        out.push_str(&format!("{mark}  {}: {}\n", c.title, c.summary));
        if let Some(detail) = &c.detail {
            out.push_str(&format!("      {detail}\n"));
        }
        if let Some(fix) = &c.fix {
            out.push_str(&format!("      fix: {fix}\n"));
        }
    }
    let failed = report.checks.iter().filter(|c| c.status == CheckStatus::Fail).count();
    out.push_str(&if failed == 0 {
        "\nEverything Cursor models need is in place.\n".to_string()
    } else {
        format!("\n{failed} check(s) failed: Cursor models will not answer until they are fixed.\n")
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments() {
        let a = |v: &[&str]| parse(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(a(&[]), Ok(Args::default()));
        assert_eq!(
            a(&["--json", "--cli-path=/x/agent", "--workspace", "/w", "--untrusted"]),
            Ok(Args {
                json: true,
                cli_path: Some("/x/agent".into()),
                workspace: Some("/w".into()),
                untrusted: true,
                ..Args::default()
            })
        );
        assert_eq!(
            a(&["--probe", "--yes", "--json"]),
            Ok(Args { probe: true, yes: true, json: true, ..Args::default() })
        );
        assert!(a(&["--cli-path"]).is_err());
        assert!(a(&["--nope"]).is_err());
    }
}

//! `cursor-bridge doctor`: the set-up checks of `engine/doctor.rs`, run from a terminal, as text
//! for a person (each check with its fix) or `--json` for tools (the `doctor` method's result,
//! protocol.md). Exit status 0 when no check failed, 1 when one did, 2 for bad arguments.

use std::path::PathBuf;

use crate::backend::select;
use crate::engine::{Config, Engine};
use crate::protocol::{CheckStatus, DoctorResult, Options};
use crate::startup;
use crate::translate;

pub const USAGE: &str = "\
Usage: cursor-bridge doctor [--json] [--cli-path PATH] [--workspace DIR] [--untrusted]

Checks what Cursor models need, and says how to fix what is missing: the Cursor CLI (path,
version), its login or an API key, the model list, the workspace trust, the backend that will
serve, and the state folder. Exit status: 0 when no check failed, 1 when one did.

Options:
  --json            the report as JSON (protocol.md, method `doctor`)
  --cli-path PATH   the Cursor CLI to check (else CURSOR_BRIDGE_CLI_PATH, then PATH)
  --workspace DIR   the folder turns would run in (default: the current folder)
  --untrusted       check as an untrusted (Restricted Mode) workspace
";

#[derive(Debug, Default, PartialEq)]
struct Args {
    json: bool,
    cli_path: Option<String>,
    workspace: Option<PathBuf>,
    untrusted: bool,
}

fn parse(args: &[String]) -> Result<Args, String> {
    let mut out = Args::default();
    crate::util::args::each_option(args, |name, value| {
        match name {
            "--json" => out.json = true,
            "--untrusted" => out.untrusted = true,
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
    let started = match startup::start() {
        Ok(s) => s,
        Err(code) => return code,
    };
    let options = Options { workspace_trusted: !args.untrusted, ..Options::default() };
    let report = started.runtime.block_on(async {
        let config =
            Config::new(translate::engine_settings(&options), vec![workspace], started.paths.state_dir.clone())?;
        let settings = select::Settings {
            neutral_dir: Some(config.neutral_folder()?),
            ..translate::backend_settings(args.cli_path.clone(), None, &options)
        };
        let backend = select::backend(settings);
        let engine = Engine::new(config, backend);
        let report = translate::doctor(engine.doctor().await);
        engine.shutdown();
        Ok::<_, crate::error::BridgeError>(report)
    });
    let code = match report {
        Ok(report) => {
            if args.json {
                match serde_json::to_string_pretty(&report) {
                    Ok(json) => println!("{json}"),
                    Err(e) => eprintln!("cursor-bridge doctor: {e}"),
                }
            } else {
                print!("{}", text(&report));
            }
            i32::from(!report.ok)
        }
        Err(e) => {
            eprintln!("cursor-bridge doctor: {e}");
            1
        }
    };
    started.finish(code)
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
            Ok(Args { json: true, cli_path: Some("/x/agent".into()), workspace: Some("/w".into()), untrusted: true })
        );
        assert!(a(&["--cli-path"]).is_err());
        assert!(a(&["--nope"]).is_err());
    }
}

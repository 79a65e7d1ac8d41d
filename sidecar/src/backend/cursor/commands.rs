//! Short CLI subcommands: `--version`, `models`, `create-chat`, `status`. Each runs with stdin
//! closed, output bounded and a timeout (docs/cursor-cli.md §7.4 and §10 #15: `status` has been
//! reported to hang at times), and its process group is killed when it is done or abandoned.

use std::path::Path;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};

use super::discovery::CliCommand;
use super::env::ChildEnv;
use super::models::{parse_model_list, CliModel, ModelListError};
use crate::backend::process::{self, SpawnSpec};
use crate::error::{BridgeError, Result};
use crate::util::text::strip_ansi;
use crate::vocab::ErrorKind;

/// Output kept from a one-shot command; more is dropped (a `models` list is ~10 KB).
const MAX_OUTPUT: usize = 1024 * 1024;

pub const VERSION_TIMEOUT: Duration = Duration::from_secs(10);
pub const MODELS_TIMEOUT: Duration = Duration::from_secs(30);
pub const CREATE_CHAT_TIMEOUT: Duration = Duration::from_secs(15);
pub const STATUS_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug)]
pub struct Output {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

pub fn spawn_spec(cli: &CliCommand, args: &[&str], env: &ChildEnv, cwd: Option<&Path>) -> SpawnSpec {
    let mut all_args = cli.prefix_args.clone();
    all_args.extend(args.iter().map(Into::into));
    let mut env_set = cli.env.clone();
    env_set.extend(env.set.iter().cloned());
    SpawnSpec {
        program: cli.program.clone(),
        args: all_args,
        cwd: cwd.map(Path::to_path_buf),
        env: env_set,
        env_remove: env.remove.clone(),
    }
}

pub async fn run(
    cli: &CliCommand,
    args: &[&str],
    env: &ChildEnv,
    cwd: Option<&Path>,
    timeout: Duration,
) -> Result<Output> {
    let mut child = process::spawn(&spawn_spec(cli, args, env, cwd)).map_err(|e| spawn_error(cli, &e))?;
    drop(child.take_stdin());
    let stdout = child.take_stdout();
    let stderr = child.take_stderr();
    let work = async {
        let (out, err) = tokio::join!(read_bounded(stdout), read_bounded(stderr));
        let status = child.wait().await.ok();
        (out, err, status)
    };
    match tokio::time::timeout(timeout, work).await {
        Ok((stdout, stderr, status)) => Ok(Output { code: status.and_then(|s| s.code()), stdout, stderr }),
        // Dropping `child` (inside `work`) kills the process group.
        Err(_) => Err(BridgeError::new(
            ErrorKind::Timeout,
            format!("`{} {}` did not answer within {} s", cli_name(cli), args.join(" "), timeout.as_secs()),
        )
        .hint("The Cursor CLI may be updating or waiting for the network; try again, or run the command in a terminal to see what it does.")),
    }
}

async fn read_bounded<R: AsyncRead + Unpin>(reader: Option<R>) -> String {
    let Some(reader) = reader else { return String::new() };
    let mut buf = Vec::new();
    let mut limited = reader.take(MAX_OUTPUT as u64);
    let _ = limited.read_to_end(&mut buf).await;
    // Drain the rest so the child does not block on a full pipe.
    let mut rest = limited.into_inner();
    let _ = tokio::io::copy(&mut rest, &mut tokio::io::sink()).await;
    String::from_utf8_lossy(&buf).into_owned()
}

fn cli_name(cli: &CliCommand) -> String {
    cli.display.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "agent".into())
}

/// A spawn that failed: missing or not executable means "install / fix the path".
pub fn spawn_error(cli: &CliCommand, e: &std::io::Error) -> BridgeError {
    use std::io::ErrorKind as Io;
    match e.kind() {
        Io::NotFound | Io::PermissionDenied => {
            BridgeError::new(ErrorKind::CliNotFound, format!("The Cursor CLI could not be started ({})", e.kind()))
                .hint(super::failures::HINT_INSTALL)
                .detail(format!("{}: {e}", cli.display.display()))
        }
        _ => BridgeError::new(ErrorKind::CliFailed, format!("The Cursor CLI could not be started: {e}"))
            .hint("See Cursor Bridge logs for details.")
            .detail(cli.display.display().to_string()),
    }
}

// `--version`, `models` and `status` run in `cwd`, a folder of ours: run in a repository, the CLI
// would read (and on some builds act on) its `.cursor/` configuration before any turn asked.
pub async fn version(cli: &CliCommand, env: &ChildEnv, cwd: &Path) -> Option<String> {
    let out = run(cli, &["--version"], env, Some(cwd), VERSION_TIMEOUT).await.ok()?;
    let v = strip_ansi(out.stdout.trim()).trim().to_string();
    (out.code == Some(0) && !v.is_empty()).then_some(v)
}

pub async fn list_models(cli: &CliCommand, env: &ChildEnv, cwd: &Path) -> Result<Vec<CliModel>> {
    let out = run(cli, &["models"], env, Some(cwd), MODELS_TIMEOUT).await?;
    // `models` exits 0 even when it refuses (docs/cursor-cli.md §7.1); read what it printed on
    // both pipes.
    let text = if out.stdout.trim().is_empty() { &out.stderr } else { &out.stdout };
    match parse_model_list(text) {
        Ok(models) => Ok(models),
        Err(ModelListError::AuthRequired) => {
            Err(BridgeError::new(ErrorKind::AuthRequired, "The Cursor CLI is not logged in, so it cannot list models")
                .hint(super::failures::HINT_AUTH))
        }
        Err(ModelListError::NoModels) => {
            Err(BridgeError::new(ErrorKind::InvalidModel, "Your Cursor account has no models available")
                .hint("Check your Cursor plan at cursor.com/dashboard."))
        }
        Err(ModelListError::Unrecognised { excerpt }) => {
            let failure = super::failures::classify(out.code, &out.stderr, None);
            if failure.kind != ErrorKind::CliFailed {
                return Err(failure.into());
            }
            Err(BridgeError::new(ErrorKind::CliFailed, "The Cursor CLI printed no model list")
                .hint("Run `agent models` in a terminal to see what it says; `agent update` may help.")
                .detail(excerpt))
        }
    }
}

/// A new chat id from `create-chat` (a UUID line; docs/cursor-cli.md §6).
pub async fn create_chat(cli: &CliCommand, env: &ChildEnv, workspace: &Path) -> Result<String> {
    let out = run(cli, &["create-chat"], env, Some(workspace), CREATE_CHAT_TIMEOUT).await?;
    let id = strip_ansi(&out.stdout).lines().map(str::trim).find(|l| is_chat_id(l)).map(str::to_string);
    match (out.code, id) {
        (Some(0), Some(id)) => Ok(id),
        _ => Err(BridgeError::from(super::failures::classify(out.code, &out.stderr, None))),
    }
}

fn is_chat_id(s: &str) -> bool {
    s.len() >= 8 && s.len() <= 64 && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

#[derive(Debug, Clone, Default)]
pub struct LoginStatus {
    pub logged_in: Option<bool>,
    pub account: Option<String>,
}

/// `status`: `✓ Logged in as <email>` or `Not logged in`, exit 0 both ways
/// (docs/cursor-cli.md §7.4).
pub async fn status(cli: &CliCommand, env: &ChildEnv, cwd: &Path) -> LoginStatus {
    let Ok(out) = run(cli, &["status"], env, Some(cwd), STATUS_TIMEOUT).await else {
        return LoginStatus::default();
    };
    parse_status(&format!("{}\n{}", out.stdout, out.stderr))
}

pub fn parse_status(text: &str) -> LoginStatus {
    let text = strip_ansi(text);
    for line in text.lines() {
        let line = line.trim();
        if line.to_ascii_lowercase().contains("not logged in") {
            return LoginStatus { logged_in: Some(false), account: None };
        }
        if let Some(i) = line.find("Logged in as") {
            let account = line[i + "Logged in as".len()..].trim();
            return LoginStatus { logged_in: Some(true), account: (!account.is_empty()).then(|| account.to_string()) };
        }
    }
    LoginStatus::default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_lines() {
        let s = parse_status("\u{1b}[32m✓\u{1b}[0m Logged in as test@example.com\n");
        assert_eq!(s.logged_in, Some(true));
        assert_eq!(s.account.as_deref(), Some("test@example.com"));
        assert_eq!(parse_status("Not logged in\n").logged_in, Some(false));
        assert_eq!(parse_status("something else").logged_in, None);
    }

    #[test]
    fn chat_ids() {
        assert!(is_chat_id("5f0c2b7e-8d41-4a3c-9e6b-1c2d3e4f5a61"));
        assert!(!is_chat_id("Error: nope"));
    }
}

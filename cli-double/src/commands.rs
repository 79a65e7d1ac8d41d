//! Everything except print mode: `--version`, `--help`, `models`/`--list-models`, `create-chat`,
//! `status`/`whoami`, `about`, and the subcommands the double only answers with a fixed refusal.
//! Each function returns the exit status.

use crate::args::Parsed;
use crate::auth::{self, Auth};
use crate::json::{obj, Json};
use crate::models::Catalogue;
use crate::output::{stderr_line, stdout_bytes};
use crate::style::{colour_enabled, Painter};
use crate::{ids, process, settings};

pub fn version() -> i32 {
    stdout_bytes(format!("{}\n", settings::version()).as_bytes());
    0
}

pub fn help() -> i32 {
    stdout_bytes(HELP.as_bytes());
    0
}

/// `models` / `--list-models` (docs/cursor-cli.md §7.1). Refusals exit 0 like the real CLI.
pub fn models(parsed: &Parsed) -> i32 {
    process::sleep(settings::millis("CURSOR_DOUBLE_MODELS_DELAY_MS"));
    match auth::resolve(parsed) {
        Auth::Ok(_) => {}
        Auth::InvalidKey => {
            stderr_line(auth::INVALID_KEY);
            return 1;
        }
        Auth::Missing => {
            let text = format!("{}\n", auth::MODELS_AUTH_REQUIRED);
            match settings::var("CURSOR_DOUBLE_MODELS_AUTH_CHANNEL").as_deref() {
                Some("stderr") => stderr_line(&text),
                _ => stdout_bytes(text.as_bytes()),
            }
            return 0;
        }
    }
    let catalogue = match Catalogue::load() {
        Ok(c) => c,
        Err(e) => {
            stderr_line(&format!("cursor-agent-double: {e}"));
            return 2;
        }
    };
    if catalogue.empty {
        stdout_bytes(b"No models available for this account\n");
        return 0;
    }
    stdout_bytes(catalogue.render(Painter { on: colour_enabled() }).as_bytes());
    0
}

/// `create-chat`: a fresh UUIDv4, offline, no login needed (docs/cursor-cli.md §6).
pub fn create_chat() -> i32 {
    process::sleep(settings::millis("CURSOR_DOUBLE_CREATE_CHAT_DELAY_MS"));
    if settings::enabled("CURSOR_DOUBLE_CREATE_CHAT_FAIL") {
        stderr_line("Error: Failed to create chat: fetch failed");
        return 1;
    }
    let id = ids::uuid_v4();
    crate::chats::note_created(&id);
    stdout_bytes(format!("{id}\n").as_bytes());
    0
}

/// `status` / `whoami` (docs/cursor-cli.md §7.4). Only the stored login counts: an API key does
/// not make it say "Logged in".
pub fn status(parsed: &Parsed) -> i32 {
    if settings::enabled("CURSOR_DOUBLE_STATUS_HANG") {
        process::hang_forever();
    }
    let logged_in = settings::logged_in();
    let email = settings::email();
    if parsed.value("format") == Some("json") {
        let value = if logged_in {
            obj([
                ("status", "authenticated".into()),
                ("isAuthenticated", true.into()),
                ("hasAccessToken", true.into()),
                ("hasRefreshToken", true.into()),
                ("userEmail", email.as_str().into()),
                ("message", format!("Logged in as {email}").into()),
            ])
        } else {
            obj([
                ("status", "unauthenticated".into()),
                ("isAuthenticated", false.into()),
                ("hasAccessToken", false.into()),
                ("hasRefreshToken", false.into()),
                ("message", "Not logged in".into()),
            ])
        };
        stdout_bytes(format!("{value}\n").as_bytes());
        return 0;
    }
    let paint = Painter { on: colour_enabled() };
    let line = if logged_in {
        format!("{} Logged in as {}\n", paint.green("✓"), paint.bold(&email))
    } else {
        format!("{}\n", paint.yellow("Not logged in"))
    };
    stdout_bytes(line.as_bytes());
    0
}

/// `about` (keys of docs/cursor-cli.md §7.4), values invented but shaped like Node's
/// `process.platform/arch`.
pub fn about(parsed: &Parsed) -> i32 {
    let platform = match std::env::consts::OS {
        "macos" => "darwin",
        "windows" => "win32",
        other => other,
    };
    let arch = match std::env::consts::ARCH {
        "x86_64" => "x64",
        "aarch64" => "arm64",
        other => other,
    };
    let email = settings::logged_in().then(settings::email);
    let terminal = settings::non_empty("TERM_PROGRAM");
    let shell = settings::non_empty("SHELL").map(|s| s.rsplit('/').next().unwrap_or(&s).to_owned());
    if parsed.value("format") == Some("json") {
        let value = obj([
            ("cliVersion", settings::version().into()),
            ("model", "Auto".into()),
            ("subscriptionTier", "Pro".into()),
            ("osPlatform", platform.into()),
            ("osArch", arch.into()),
            ("userEmail", email.into()),
            ("terminalProgram", terminal.into()),
            ("shell", shell.into()),
            ("lastRequestId", Json::Null),
        ]);
        stdout_bytes(format!("{value}\n").as_bytes());
        return 0;
    }
    let text = format!(
        "About Cursor CLI\n\nCLI Version         {}\nModel               Auto\nSubscription Tier   Pro\nOS                  {} ({})\nTerminal            {}\nShell               {}\nUser Email          {}\n",
        settings::version(),
        platform,
        arch,
        terminal.as_deref().unwrap_or("unknown"),
        shell.as_deref().unwrap_or("unknown"),
        email.as_deref().unwrap_or("Not logged in"),
    );
    stdout_bytes(text.as_bytes());
    0
}

/// `ls` is an Ink TUI; without a TTY the real CLI prints this and exits 0 (S-acp-probe).
pub fn ls() -> i32 {
    stdout_bytes(
        b"ERROR Raw mode is not supported on the current process.stdin, which Ink uses as input stream by default.\n",
    );
    0
}

/// `resume` subcommand with no stored chats (S-acp-probe).
pub fn resume_list() -> i32 {
    stdout_bytes(b"No previous chats found.\n");
    0
}

/// Double-only: subcommands that have no use in tests (login, mcp, update, ...) and the
/// interactive TUI. Exit 3 so a test notices it drove the double somewhere it cannot follow.
pub fn not_simulated(what: &str) -> i32 {
    stderr_line(&format!("cursor-agent-double: {what} is not simulated by the test double"));
    3
}

const HELP: &str = "Usage: agent [options] [command] [prompt...]

Start the Cursor Agent

Arguments:
  prompt                       Initial prompt for the agent

Options:
  -v, --version                Output the version number
  --api-key <key>              API key for authentication (can also use CURSOR_API_KEY env var)
  --auth-token <token>         Auth token for authentication (can also use CURSOR_AUTH_TOKEN env var)
  -H, --header <header>        Add custom header to agent requests (format: 'Name: Value', can be used multiple times)
  -e, --endpoint <url>         API endpoint (can also use CURSOR_API_ENDPOINT env var)
  -p, --print                  Print responses to console (for scripts or non-interactive use). Has access to all tools, including write and shell.
  --output-format <format>     Output format (only works with --print): text | json | stream-json (default: \"text\")
  --stream-partial-output      Stream partial output as individual text deltas (only works with --print and stream-json format)
  --mode <mode>                Start in the given execution mode (choices: \"plan\", \"ask\")
  --plan                       Start in plan mode (shorthand for --mode=plan)
  --resume [chatId]            Resume a chat session
  --continue                   Continue previous session
  --model <model>              Model to use (e.g., gpt-5, sonnet-4, sonnet-4-thinking)
  --list-models                List available models and exit
  -f, --force                  Force allow commands unless explicitly denied
  --yolo                       Alias for --force
  --auto-review                Let the server auto-run safe tool calls and prompt for the rest
  --sandbox <mode>             Explicitly enable or disable sandbox mode (choices: \"enabled\", \"disabled\")
  --approve-mcps               Automatically approve all MCP servers
  --trust                      Trust the current workspace without prompting
  --workspace <path>           Workspace directory to use (defaults to current working directory)
  --add-dir <path>             Add an additional workspace root (can be used multiple times)
  --plugin-dir <path>          Load a local plugin directory (can be used multiple times)
  -w, --worktree [name]        Start in an isolated git worktree at ~/.cursor/worktrees/<repo>/<name>
  --worktree-base <branch>     Branch or ref to base the new worktree on
  --skip-worktree-setup        Skip running worktree setup scripts from .cursor/worktrees.json
  -h, --help                   Display help for command

Commands:
  persist                      Start a session that survives disconnects
  install-shell-integration    Install shell integration to ~/.zshrc
  uninstall-shell-integration  Remove shell integration from ~/.zshrc
  login                        Authenticate with Cursor. Set NO_OPEN_BROWSER to disable browser opening.
  logout                       Sign out and clear stored authentication
  mcp                          Manage MCP servers
  plugin                       Manage plugins
  worker [options]             Run a background worker
  status|whoami [options]      View authentication status
  models                       List available models for this account
  team                         Manage team settings
  bedrock                      Configure Amazon Bedrock
  about [options]              Display version, system, and account information
  update|upgrade               Update Cursor Agent to the latest version
  create-chat                  Create a new empty chat and return its ID
  generate-rule|rule           Generate a new Cursor rule with interactive prompts
  agent [prompt...]            Start the Cursor Agent
  ls                           Resume a chat session
  resume                       Resume the latest chat session
  help [command]               display help for command
";

//! The CLI's argv for one chat turn. The prompt is never here (it goes on stdin: argv is capped at
//! 128 KiB per string on Linux and ~32K per line on Windows), nor is the API key (argv is readable
//! by every user through `/proc/*/cmdline`; the key goes in the child's environment).

use std::ffi::OsString;
use std::path::Path;

use crate::vocab::Mode;

#[derive(Debug, Clone)]
pub struct TurnArgs<'a> {
    pub model: &'a str,
    pub mode: Mode,
    pub workspace: &'a Path,
    /// `--resume <chatId>`: a chat from `create-chat` or an earlier turn.
    pub resume: Option<&'a str>,
    /// `--force`: run shell commands without asking (only when the client's options ask for it).
    pub force: bool,
    /// `--stream-partial-output`: token-sized deltas instead of one event per segment.
    pub partial: bool,
}

pub fn turn_args(t: &TurnArgs<'_>) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec!["-p".into(), "--output-format".into(), "stream-json".into()];
    if t.partial {
        args.push("--stream-partial-output".into());
    }
    args.extend(["--model".into(), t.model.into()]);
    args.extend(["--workspace".into(), t.workspace.as_os_str().to_owned()]);
    // Agent is the CLI's default and `--mode agent` is rejected (docs/cursor-cli.md §2.1).
    match t.mode {
        Mode::Agent => {}
        Mode::Ask => args.extend(["--mode".into(), "ask".into()]),
        Mode::Plan => args.extend(["--mode".into(), "plan".into()]),
    }
    if let Some(chat) = t.resume {
        args.extend(["--resume".into(), chat.into()]);
    }
    // Without --trust a headless run stops at the workspace-trust gate (docs/cursor-cli.md §8;
    // the refusal text is in §5.2).
    args.push("--trust".into());
    if t.force {
        args.push("--force".into());
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(mode: Mode, resume: Option<&str>, force: bool) -> Vec<String> {
        turn_args(&TurnArgs { model: "sonnet-5", mode, workspace: Path::new("/w"), resume, force, partial: true })
            .into_iter()
            .map(|a| a.into_string().unwrap())
            .collect()
    }

    #[test]
    fn agent_mode_passes_no_mode_flag() {
        assert_eq!(
            args(Mode::Agent, None, false),
            [
                "-p",
                "--output-format",
                "stream-json",
                "--stream-partial-output",
                "--model",
                "sonnet-5",
                "--workspace",
                "/w",
                "--trust"
            ]
        );
    }

    #[test]
    fn ask_plan_resume_force() {
        let a = args(Mode::Ask, Some("chat-1"), true);
        assert!(a.windows(2).any(|w| w == ["--mode", "ask"]));
        assert!(a.windows(2).any(|w| w == ["--resume", "chat-1"]));
        assert!(a.contains(&"--force".to_string()));
        let p = args(Mode::Plan, None, false);
        assert!(p.windows(2).any(|w| w == ["--mode", "plan"]));
        assert!(!p.contains(&"--force".to_string()));
        assert!(!p.iter().any(|x| x == "--resume"));
    }
}

//! Argument parsing and the non-print subcommands.

mod common;

use common::*;

#[test]
fn mode_agent_is_rejected_like_commander() {
    let out = double().args(["-p", "--mode", "agent", "hi"]).run();
    assert_eq!(out.code, Some(1));
    assert_eq!(
        out.stderr(),
        "error: option '--mode <mode>' argument 'agent' is invalid. Allowed choices are plan, ask.\n"
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn invalid_output_format_is_rejected() {
    let out = double().args(["-p", "--output-format=xml"]).run();
    assert_eq!(out.code, Some(1));
    assert_eq!(
        out.stderr(),
        "error: option '--output-format <format>' argument 'xml' is invalid. Allowed choices are text, json, stream-json.\n"
    );
}

#[test]
fn unknown_option_is_reported_after_parsing() {
    let out = double().args(["-p", "hello", "--bogus", "--trust"]).run();
    assert_eq!(out.code, Some(1));
    assert_eq!(out.stderr(), "error: unknown option '--bogus'\n");
    assert!(out.stdout.is_empty());
}

#[test]
fn every_reference_option_is_accepted() {
    let out = double()
        .args([
            "--api-key",
            "k",
            "--auth-token",
            "t",
            "-H",
            "X-A: 1",
            "--header=X-B: 2",
            "-e",
            "https://e",
            "-p",
            "--output-format",
            "stream-json",
            "--stream-partial-output",
            "--mode",
            "ask",
            "--plan",
            "--resume",
            "abc",
            "--continue",
            "--model",
            "auto",
            "-f",
            "--yolo",
            "--auto-review",
            "--sandbox",
            "disabled",
            "--approve-mcps",
            "--trust",
            "--workspace",
            ".",
            "--add-dir",
            "/tmp",
            "--plugin-dir",
            "/tmp",
            "-w",
            "--worktree-base",
            "main",
            "--skip-worktree-setup",
            "--",
            "the prompt",
        ])
        .run();
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr());
    let events = out.events();
    assert_eq!(str_at(&events[0], &["session_id"]), Some("abc"));
    assert_eq!(assistant_text(&events[events.len() - 2]), "Echo: the prompt");
}

#[test]
fn version_and_override() {
    let out = double().args(["-v"]).run();
    assert_eq!((out.code, out.stdout()), (Some(0), "2026.09.28-64d2043\n".to_owned()));
    let out = double().args(["--version"]).env("CURSOR_DOUBLE_VERSION", "2026.06.15-03-48-54-da23e37").run();
    assert_eq!(out.stdout(), "2026.06.15-03-48-54-da23e37\n");
}

#[test]
fn models_plain() {
    let out = double().args(["models"]).run();
    assert_eq!(out.code, Some(0));
    let text = out.stdout();
    assert!(!text.contains('\x1b'));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(&lines[..3], ["Available models", "", "auto - Auto (current, default)"]);
    assert!(lines.contains(&"kimi-k2.5 - Kimi K2.5  (NO ZDR)"));
    assert_eq!(lines[lines.len() - 2], "");
    assert!(lines[lines.len() - 1].starts_with("Tip: use --model <id>"));
    assert!(text.ends_with(".\n"));
    // `--list-models` prints the same catalogue.
    assert_eq!(double().args(["--list-models"]).run().stdout(), text);
}

#[test]
fn models_coloured_only_when_forced() {
    let plain = double().args(["models"]).run().stdout();
    let coloured = double().args(["models"]).env("FORCE_COLOR", "1").run().stdout();
    assert!(coloured.contains("\x1b[36mauto\x1b[39m"), "{coloured:?}");
    assert!(coloured.contains("\x1b]"), "an OSC sequence is expected");
    assert_eq!(strip_ansi(&coloured), plain);
    // NO_COLOR and FORCE_COLOR=0 beat FORCE_COLOR; CURSOR_DOUBLE_COLOR=always beats everything.
    let no = double().args(["models"]).env("FORCE_COLOR", "1").env("NO_COLOR", "1").run().stdout();
    assert_eq!(no, plain);
    let zero = double().args(["models"]).env("FORCE_COLOR", "0").run().stdout();
    assert_eq!(zero, plain);
    let always = double().args(["models"]).env("NO_COLOR", "1").env("CURSOR_DOUBLE_COLOR", "always").run().stdout();
    assert_eq!(always, coloured);
}

#[test]
fn models_refusals_exit_zero() {
    let out = double().args(["models"]).env("CURSOR_DOUBLE_LOGGED_IN", "0").run();
    assert_eq!(out.code, Some(0));
    assert_eq!(
        out.stdout(),
        "Error: Authentication required. Run 'agent login', pass --api-key/--auth-token, or set CURSOR_API_KEY/CURSOR_AUTH_TOKEN.\n"
    );
    let out = double()
        .args(["models"])
        .env("CURSOR_DOUBLE_LOGGED_IN", "0")
        .env("CURSOR_DOUBLE_MODELS_AUTH_CHANNEL", "stderr")
        .run();
    assert!(out.stdout.is_empty() && out.stderr().starts_with("Error: Authentication required."));
    let out = double().args(["models"]).env("CURSOR_DOUBLE_LOGGED_IN", "0").env("CURSOR_API_KEY", "k").run();
    assert!(out.stdout().starts_with("Available models\n"));
    let out = double().args(["models"]).env("CURSOR_DOUBLE_NO_MODELS", "1").run();
    assert_eq!((out.code, out.stdout()), (Some(0), "No models available for this account\n".to_owned()));
}

#[test]
fn models_file_is_printed_verbatim_and_used_for_validation() {
    let path = temp_path("models.txt");
    let listing = "Available models\n\nauto - Auto (current, default)\nmy-model - My Model\n\nTip: x\n";
    std::fs::write(&path, listing).unwrap();
    let file = path.to_str().unwrap();
    let out = double().args(["models"]).env("CURSOR_DOUBLE_MODELS_FILE", file).run();
    assert_eq!(out.stdout(), listing);
    let out = double()
        .args(["-p", "--trust", "--output-format", "stream-json", "--model", "my-model", "hi"])
        .env("CURSOR_DOUBLE_MODELS_FILE", file)
        .run();
    assert_eq!(str_at(&out.events()[0], &["model"]), Some("My Model"));
    let out = double().args(["-p", "--trust", "--model", "opus-5", "hi"]).env("CURSOR_DOUBLE_MODELS_FILE", file).run();
    assert_eq!(out.stderr(), "Cannot use this model: opus-5. Available models: auto, my-model\n");
    let _ = std::fs::remove_file(path);
}

#[test]
fn create_chat_prints_a_uuid_even_logged_out() {
    let out = double().args(["create-chat"]).env("CURSOR_DOUBLE_LOGGED_IN", "0").run();
    assert_eq!(out.code, Some(0));
    let text = out.stdout();
    assert!(text.ends_with('\n') && is_uuid_v4(text.trim_end()), "{text:?}");
    assert_ne!(double().args(["create-chat"]).run().stdout(), text);
    let out = double().args(["create-chat"]).env("CURSOR_DOUBLE_CREATE_CHAT_FAIL", "1").run();
    assert_eq!(out.code, Some(1));
    assert!(out.stdout.is_empty() && !out.stderr.is_empty());
}

#[test]
fn status_ignores_api_keys() {
    let out = double().args(["status"]).run();
    assert_eq!((out.code, out.stdout()), (Some(0), "✓ Logged in as test@example.com\n".to_owned()));
    let out = double().args(["whoami"]).env("CURSOR_DOUBLE_LOGGED_IN", "0").env("CURSOR_API_KEY", "k").run();
    assert_eq!((out.code, out.stdout()), (Some(0), "Not logged in\n".to_owned()));
    let out = double().args(["status", "--format", "json"]).env("CURSOR_DOUBLE_LOGGED_IN", "0").run();
    assert_eq!(
        out.stdout(),
        "{\"status\":\"unauthenticated\",\"isAuthenticated\":false,\"hasAccessToken\":false,\"hasRefreshToken\":false,\"message\":\"Not logged in\"}\n"
    );
    let coloured = double().args(["status"]).env("FORCE_COLOR", "1").run().stdout();
    assert!(coloured.contains('\x1b'));
    assert_eq!(strip_ansi(&coloured), "✓ Logged in as test@example.com\n");
}

#[test]
fn about_json_has_reference_keys() {
    let out = double().args(["about", "--format", "json"]).run();
    let v = Json::parse(out.stdout().trim_end()).unwrap();
    let keys: Vec<&str> = v.as_object().unwrap().iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        keys,
        [
            "cliVersion",
            "model",
            "subscriptionTier",
            "osPlatform",
            "osArch",
            "userEmail",
            "terminalProgram",
            "shell",
            "lastRequestId"
        ]
    );
}

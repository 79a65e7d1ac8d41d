//! The scripted tool-calling model on the prompt protocol (docs/client-tools.md): the cases of
//! tests/fixtures/tool-script-cases.json played in print mode (one `--resume` run per prompt) and
//! over ACP (one session, no MCP server), then what only print mode shows (deltas, the record,
//! builtin tools and the permission files, the login knob).

mod common;

use std::path::{Path, PathBuf};

use common::acp::*;
use common::*;

const DENIED: &str = "Permission denied: Command blocked by permissions configuration";

/// The `<client_tools>` block as the bridge writes it (docs/client-tools.md).
fn offer(names: &[String]) -> String {
    let tools: Vec<String> = names
        .iter()
        .map(|n| format!(r#"{{"name":"{n}","description":"The {n} tool","parameters":{{"type":"object"}}}}"#))
        .collect();
    format!(
        "<client_tools>\nThe user's editor runs tools for you. Your own tools are disabled here: use only these.\nTools (JSON): [{}]\nTo call tools, end your reply with one block of this exact form and write nothing after it:\n[TOOL_CALLS: [{{\"name\": \"create_file\", \"arguments\": {{\"filePath\": \"…\", \"content\": \"…\"}}}}]]\nSeveral calls in one array run in order. Each result comes back in the next message.\nWhen you need no tool, answer normally.\n</client_tools>\n",
        tools.join(",")
    )
}

struct Case {
    name: String,
    /// (full prompt text, expected answer)
    turns: Vec<(String, String)>,
}

fn cases() -> Vec<Case> {
    let all = Json::parse(&fixture("tool-script-cases.json")).unwrap();
    let Json::Arr(items) = all else { panic!("the cases file holds an array") };
    items
        .iter()
        .map(|c| {
            let scenario = c.get("scenario").filter(|s| !matches!(s, Json::Null)).cloned();
            let Some(Json::Arr(turns)) = c.get("turns") else { panic!("turns") };
            let turns = turns
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    let mut text = String::new();
                    if i == 0 {
                        if let Some(sc) = &scenario {
                            text.push_str(&format!("[[double:{}]]\n", sc.to_compact()));
                        }
                    }
                    if let Some(Json::Arr(names)) = t.get("offer") {
                        let names: Vec<String> = names.iter().filter_map(Json::as_str).map(str::to_owned).collect();
                        text.push_str(&offer(&names));
                    }
                    text.push_str(str_at(t, &["prompt"]).unwrap());
                    (text, str_at(t, &["answer"]).unwrap().to_owned())
                })
                .collect();
            Case { name: str_at(c, &["name"]).unwrap().to_owned(), turns }
        })
        .collect()
}

struct Dirs(Vec<PathBuf>);
impl Drop for Dirs {
    fn drop(&mut self) {
        for p in &self.0 {
            let _ = std::fs::remove_dir_all(p);
        }
    }
}

fn dir(name: &str) -> PathBuf {
    let p = temp_path(name);
    std::fs::create_dir_all(&p).unwrap();
    std::fs::canonicalize(p).unwrap()
}

fn print_run(home: &Path, cwd: &Path, chat: &str, prompt: &str) -> Output {
    let mut c = double().args(["-p", "--trust", "--resume", chat]).env("HOME", home.to_str().unwrap()).command();
    c.current_dir(cwd);
    run_command(c, prompt)
}

/// Runs a prepared command with `stdin` (the helpers' `run` without the builder).
fn run_command(mut c: std::process::Command, stdin: &str) -> Output {
    use std::io::Write;
    use std::process::Stdio;
    c.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let mut pipe = child.stdin.take().unwrap();
    let input = stdin.as_bytes().to_vec();
    let w = std::thread::spawn(move || {
        let _ = pipe.write_all(&input);
    });
    let out = child.wait_with_output().unwrap();
    w.join().unwrap();
    Output { code: out.status.code(), stdout: out.stdout, stderr: out.stderr }
}

#[test]
fn cases_in_print_mode() {
    for (i, case) in cases().into_iter().enumerate() {
        let (home, cwd) = (dir("home"), dir("ws"));
        let _d = Dirs(vec![home.clone(), cwd.clone()]);
        let chat = format!("chat-{}-{i}", std::process::id());
        for (n, (prompt, answer)) in case.turns.iter().enumerate() {
            let out = print_run(&home, &cwd, &chat, prompt);
            assert_eq!(out.code, Some(0), "{} turn {n}: {}", case.name, out.stderr());
            assert_eq!(out.stdout(), format!("{answer}\n"), "{} turn {n}", case.name);
        }
    }
}

#[test]
fn cases_over_acp_without_mcp() {
    for case in cases() {
        let mut a = setup().spawn();
        a.init();
        let sid = a.new_session();
        for (n, (prompt, answer)) in case.turns.iter().enumerate() {
            let (msgs, resp) = a.turn(&sid, prompt);
            assert_eq!(stop_reason(&resp), "end_turn", "{} turn {n}", case.name);
            assert_eq!(message_text(&msgs), *answer, "{} turn {n}", case.name);
        }
        let f = a.close();
        assert_eq!(f.code, Some(0), "{}: {}", case.name, f.stderr);
    }
}

/// The script belongs to the ACP session: another process that loads it goes on with the next step.
#[test]
fn an_acp_session_keeps_its_script_across_processes() {
    let case = cases().into_iter().next().unwrap();
    let setup = setup();
    let mut a = setup.spawn();
    a.init();
    let sid = a.new_session();
    let (msgs, _) = a.turn(&sid, &case.turns[0].0);
    assert_eq!(message_text(&msgs), case.turns[0].1);
    a.close();
    let mut b = setup.spawn();
    b.init();
    let params = format!(r#"{{"sessionId":"{sid}","cwd":"{}","mcpServers":[]}}"#, b.cwd);
    b.result("session/load", &params);
    let (msgs, _) = b.turn(&sid, &case.turns[1].0);
    assert_eq!(message_text(&msgs), case.turns[1].1);
    b.close();
}

/// The block reaches a stream-json reader as deltas, `[TOOL_CALLS:` split across two of them.
#[test]
fn the_marker_is_split_across_deltas() {
    let script = r#"{"toolScript":[{"say":"Creating.","call":[{"name":"create_file","arguments":{"filePath":"a"}}]}],"chunkChars":5}"#;
    let prompt = format!("[[double:{script}]]\n{}make it", offer(&["create_file".to_owned()]));
    let out = double()
        .args(["-p", "--trust", "--output-format", "stream-json", "--stream-partial-output"])
        .stdin(prompt)
        .run();
    assert_eq!(out.code, Some(0), "{}", out.stderr());
    let ev = out.events();
    let deltas: Vec<&str> = ev
        .iter()
        .filter(|e| str_at(e, &["type"]) == Some("assistant") && e.get("timestamp_ms").is_some())
        .map(assistant_text)
        .collect();
    let at = deltas.iter().position(|d| d.ends_with("[TOOL_")).expect("a delta ends with [TOOL_");
    assert!(deltas[at + 1].starts_with("CALLS"), "{deltas:?}");
    let expected = "Creating.\n\n[TOOL_CALLS: [{\"name\": \"create_file\", \"arguments\": {\"filePath\": \"a\"}}]]";
    assert_eq!(deltas.concat(), expected);
    assert_eq!(str_at(ev.last().unwrap(), &["result"]), Some(expected));
}

fn print_record(path: &Path) -> Json {
    let text = std::fs::read_to_string(path).unwrap();
    Json::parse(text.lines().last().unwrap()).unwrap()
}

fn values_at(v: &Json, list: &str, key: &str) -> Vec<String> {
    match at(v, &["tools", list]) {
        Some(Json::Arr(items)) => items.iter().filter_map(|i| i.get(key)).map(|x| x.to_compact()).collect(),
        _ => panic!("no tools.{list} in {}", v.to_compact()),
    }
}

/// The record lists the tools offered, the calls made and the results received (cut to 200).
#[test]
fn the_record_lists_offered_tools_calls_and_results() {
    let (home, cwd) = (dir("home"), dir("ws"));
    let record = temp_path("record.jsonl");
    let _d = Dirs(vec![home.clone(), cwd.clone(), record.clone()]);
    let run = |prompt: &str| {
        let mut c = double()
            .args(["-p", "--trust", "--resume", "rec-chat"])
            .env("HOME", home.to_str().unwrap())
            .env("CURSOR_DOUBLE_RECORD", record.to_str().unwrap())
            .command();
        c.current_dir(&cwd);
        let out = run_command(c, prompt);
        assert_eq!(out.code, Some(0), "{}", out.stderr());
        print_record(&record)
    };
    let first = format!(
        "[[double:{{\"toolScript\":[{{\"call\":[{{\"name\":\"read_file\",\"arguments\":{{\"p\":1}}}},{{\"name\":\"gone\"}}]}}]}}]]\n{}read",
        offer(&["read_file".to_owned(), "create_file".to_owned()])
    );
    let r = run(&first);
    assert_eq!(values_at(&r, "offered", "names"), [r#"["read_file","create_file"]"#]);
    // In the order the model says them: the unavailable tool first, then the block.
    assert_eq!(values_at(&r, "calls", "name"), [r#""gone""#, r#""read_file""#]);
    assert_eq!(values_at(&r, "calls", "outcome"), [r#""unavailable""#, r#""sent""#]);
    assert_eq!(values_at(&r, "calls", "arguments")[1], r#"{"p":1}"#);
    assert_eq!(values_at(&r, "calls", "sessionId")[0], r#""rec-chat""#);
    let long = "x".repeat(300);
    let r = run(&format!("TOOL_RESULT (call_id=call_77, name=read_file):\n{long}\nEND_TOOL_RESULT"));
    assert_eq!(values_at(&r, "results", "callId"), [r#""call_77""#]);
    assert_eq!(values_at(&r, "results", "text"), [format!("\"{}\"", "x".repeat(200))]);
    assert_eq!(values_at(&r, "results", "via"), [r#""prompt""#]);
    // A run without anything about tools has no `tools` key.
    let mut c = double().args(["-p", "--trust"]).env("CURSOR_DOUBLE_RECORD", record.to_str().unwrap()).command();
    c.current_dir(&cwd);
    run_command(c, "hello");
    assert!(print_record(&record).get("tools").is_none());
}

/// The env scenario's script drives a chat that has no directive.
#[test]
fn the_env_scenario_can_hold_the_script() {
    let out = double()
        .args(["-p", "--trust"])
        .env("CURSOR_DOUBLE_SCENARIO", r#"{"toolScript":[{"say":"From the env."}]}"#)
        .stdin("hi")
        .run();
    assert_eq!(out.stdout(), "From the env.\n");
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A builtin tool the script reaches for, in stream-json: (tool_call completed result, file).
fn builtin_run(cwd: &Path, builtin: &str, extra: &[(&str, &str)]) -> (Vec<Json>, Output) {
    let prompt =
        format!(r#"[[double:{{"toolScript":[{{"builtin":{builtin},"say":"Tried."}}]{}}}]] go"#, extra_fields(extra));
    let mut c = double().args(["-p", "--trust", "--output-format", "stream-json"]).command();
    c.current_dir(cwd);
    for (k, v) in extra.iter().filter(|(k, _)| k.starts_with("env:")) {
        c.env(&k[4..], v);
    }
    let out = run_command(c, &prompt);
    let tools: Vec<Json> = out.events().into_iter().filter(|e| str_at(e, &["type"]) == Some("tool_call")).collect();
    (tools, out)
}

fn extra_fields(extra: &[(&str, &str)]) -> String {
    extra.iter().filter(|(k, _)| !k.starts_with("env:")).map(|(k, v)| format!(",\"{k}\":{v}")).collect()
}

fn completed_result(tools: &[Json]) -> Json {
    let done = tools.iter().find(|t| str_at(t, &["subtype"]) == Some("completed")).expect("a completed tool call");
    let call = at(done, &["tool_call"]).unwrap();
    let key = call.as_object().unwrap().iter().find(|(k, _)| k.ends_with("ToolCall")).unwrap().0.clone();
    at(call, &[&key, "result"]).unwrap().clone()
}

#[test]
fn builtin_tools_obey_the_permissions_unless_bypassed() {
    let cwd = dir("ws");
    let _d = Dirs(vec![cwd.clone()]);
    let edit = r#"{"kind":"edit","path":"x.txt","content":"hello"}"#;

    // Allowed (no configuration): the edit is made, as recent builds make edits without asking.
    let (tools, out) = builtin_run(&cwd, edit, &[]);
    assert_eq!(out.code, Some(0), "{}", out.stderr());
    assert!(completed_result(&tools).get("success").is_some());
    assert_eq!(std::fs::read_to_string(cwd.join("x.txt")).unwrap(), "hello");
    std::fs::remove_file(cwd.join("x.txt")).unwrap();

    // Denied by the project file: rejected with Cursor's text, nothing written.
    write(&cwd.join(".cursor/cli.json"), r#"{"permissions":{"allow":[],"deny":["Write(**)","Shell(*)"]}}"#);
    let (tools, _) = builtin_run(&cwd, edit, &[]);
    assert_eq!(s(&completed_result(&tools)), format!(r#"{{"rejected":{{"reason":"{DENIED}"}}}}"#));
    assert!(!cwd.join("x.txt").exists());

    // builtinBypass: the tool writes the file and completes, whatever the permissions say.
    let (tools, _) = builtin_run(&cwd, edit, &[("builtinBypass", "true")]);
    assert!(completed_result(&tools).get("success").is_some());
    assert_eq!(std::fs::read_to_string(cwd.join("x.txt")).unwrap(), "hello");

    // Shell: denied → rejected; never executed.
    let (tools, _) = builtin_run(&cwd, r#"{"kind":"shell","command":"touch made-by-shell"}"#, &[]);
    assert_eq!(str_at(&completed_result(&tools), &["rejected", "reason"]), Some(DENIED));
    assert!(!cwd.join("made-by-shell").exists());
}

#[test]
fn the_user_config_allows_denies_and_sets_the_approval_mode() {
    let (cwd, config) = (dir("ws"), dir("config"));
    let _d = Dirs(vec![cwd.clone(), config.clone()]);
    let cfg = config.to_str().unwrap();
    let shell = r#"{"kind":"shell","command":"ls -la"}"#;
    // Unlisted, allowlist mode: the question comes and, stdin being closed, is rejected.
    let (tools, out) = builtin_run(&cwd, shell, &[("env:CURSOR_CONFIG_DIR", cfg)]);
    assert!(out.events().iter().any(|e| str_at(e, &["type"]) == Some("interaction_query")));
    assert!(completed_result(&tools).get("rejected").is_some());
    // Allowed by the user config: it runs without a question.
    write(&config.join("cli-config.json"), r#"{"permissions":{"allow":["Shell(ls)"],"deny":[]}}"#);
    let (tools, out) = builtin_run(&cwd, shell, &[("env:CURSOR_CONFIG_DIR", cfg)]);
    assert!(!out.events().iter().any(|e| str_at(e, &["type"]) == Some("interaction_query")));
    assert!(completed_result(&tools).get("success").is_some());
    // approvalMode unrestricted: unlisted commands run too; deny still wins.
    write(&config.join("cli-config.json"), r#"{"approvalMode":"unrestricted","permissions":{"deny":["Shell(rm)"]}}"#);
    let (tools, _) = builtin_run(&cwd, r#"{"kind":"shell","command":"cat x"}"#, &[("env:CURSOR_CONFIG_DIR", cfg)]);
    assert!(completed_result(&tools).get("success").is_some());
    let (tools, _) = builtin_run(&cwd, r#"{"kind":"shell","command":"rm -rf x"}"#, &[("env:CURSOR_CONFIG_DIR", cfg)]);
    assert_eq!(str_at(&completed_result(&tools), &["rejected", "reason"]), Some(DENIED));
    // Without CURSOR_CONFIG_DIR the file is $HOME/.cursor/cli-config.json.
    let home = dir("home");
    let _h = Dirs(vec![home.clone()]);
    write(&home.join(".cursor/cli-config.json"), r#"{"permissions":{"deny":["Write(**)"]}}"#);
    let (tools, _) =
        builtin_run(&cwd, r#"{"kind":"write","path":"n.md","content":"x"}"#, &[("env:HOME", home.to_str().unwrap())]);
    assert_eq!(str_at(&completed_result(&tools), &["rejected", "reason"]), Some(DENIED));
}

#[test]
fn a_project_file_with_an_unknown_key_is_rejected() {
    let cwd = dir("ws");
    let _d = Dirs(vec![cwd.clone()]);
    write(&cwd.join(".cursor/cli.json"), r#"{"permissions":{"deny":[]},"approvalMode":"allowlist"}"#);
    let mut c = double().args(["-p", "--trust"]).command();
    c.current_dir(&cwd);
    let out = run_command(c, "hi");
    assert_eq!(out.code, Some(1));
    assert_eq!(out.stdout(), "");
    assert_eq!(
        out.stderr(),
        format!(
            "Error: Invalid project configuration in {}/.cursor/cli.json\n  Unrecognized key(s) in object: 'approvalMode'\n",
            cwd.display()
        )
    );
}

/// The login survives a private working folder and private config/data folders (HOME unchanged);
/// the `CURSOR_DOUBLE_AUTH_IN_CONFIG_DIR` knob (an open question) makes a private config folder lose it.
#[test]
fn the_login_survives_private_folders_unless_it_lives_in_the_config_dir() {
    let (cwd, config, data) = (dir("private"), dir("config"), dir("data"));
    let _d = Dirs(vec![cwd.clone(), config.clone(), data.clone()]);
    let run = |knob: bool| {
        let mut d = double()
            .args(["-p", "--trust", "--output-format", "stream-json"])
            .env("CURSOR_CONFIG_DIR", config.to_str().unwrap())
            .env("CURSOR_DATA_DIR", data.to_str().unwrap());
        if knob {
            d = d.env("CURSOR_DOUBLE_AUTH_IN_CONFIG_DIR", "1");
        }
        let mut c = d.command();
        c.current_dir(&cwd);
        run_command(c, "hi")
    };
    let out = run(false);
    assert_eq!(out.code, Some(0), "{}", out.stderr());
    assert_eq!(str_at(&out.events()[0], &["apiKeySource"]), Some("login"));
    let out = run(true);
    assert_eq!(out.code, Some(1));
    assert!(out.stderr().starts_with("Error: Authentication required."), "{}", out.stderr());
    // The knob alone (no private config folder) keeps the login.
    let out = double().args(["-p", "--trust"]).env("CURSOR_DOUBLE_AUTH_IN_CONFIG_DIR", "1").stdin("hi").run();
    assert_eq!(out.code, Some(0));
}

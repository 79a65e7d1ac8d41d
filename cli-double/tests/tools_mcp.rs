//! The MCP path of client-owned tools over ACP: the double connects to the session's HTTP MCP
//! server (tests/common/mcp_server.rs) as Cursor does, and its scripted model calls the server's
//! tools with Cursor's update sequence, permission question, timeout and cancel.

mod common;

use std::path::Path;
use std::time::Duration;

use common::acp::*;
use common::mcp_server::{Behaviour, McpServer, SESSION_ID, TOKEN};
use common::*;

#[path = "../src/sha256.rs"]
#[allow(dead_code)]
mod sha256;

const DENIED: &str = "Permission denied: Command blocked by permissions configuration";
const WAIT: Duration = Duration::from_secs(10);

fn session(a: &mut Acp, servers: &[String]) -> String {
    let params = format!(r#"{{"cwd":"{}","mcpServers":[{}]}}"#, a.cwd, servers.join(","));
    let r = a.result("session/new", &params);
    str_at(&r, &["sessionId"]).unwrap().to_owned()
}

fn script(steps: &str, extra: &str) -> String {
    format!("[[double:{{\"toolScript\":{steps}{extra}}}]] do it")
}

/// A turn whose permission questions are all answered `answer`: (messages, response).
fn drive(a: &mut Acp, sid: &str, text: &str, answer: &str) -> (Vec<Json>, Json) {
    let id = a.prompt(sid, text);
    let mut seen = Vec::new();
    loop {
        let m = a.next(WAIT).unwrap_or_else(|| panic!("the turn did not end; got {}", seen.len()));
        if str_at(&m, &["method"]) == Some("session/request_permission") {
            let rid = m.get("id").unwrap().clone();
            a.reply(&rid, &format!(r#"{{"outcome":{{"outcome":"selected","optionId":"{answer}"}}}}"#));
        }
        if m.get("method").is_none() && m.get("id") == Some(&Json::from(id)) {
            return (seen, m);
        }
        seen.push(m);
    }
}

fn updates<'a>(msgs: &'a [Json], kind: &str) -> Vec<&'a Json> {
    msgs.iter().filter(|m| kind_of(m) == kind).map(|m| at(m, &["params", "update"]).unwrap_or(m)).collect()
}

fn permission_requests(msgs: &[Json]) -> Vec<&Json> {
    msgs.iter().filter(|m| str_at(m, &["method"]) == Some("session/request_permission")).collect()
}

fn tools_record(f: &Finished) -> Json {
    f.exit_record().get("tools").cloned().unwrap_or_else(|| panic!("no tools in {}", s(f.exit_record())))
}

fn list_values(tools: &Json, list: &str, key: &str) -> Vec<String> {
    match tools.get(list) {
        Some(Json::Arr(items)) => {
            items.iter().map(|i| i.get(key).map(|v| v.to_compact()).unwrap_or_default()).collect()
        }
        _ => panic!("no {list}"),
    }
}

/// Waits until the double has listed the server's tools.
fn connected(server: &McpServer) {
    assert!(
        server.wait_for(WAIT, |st| st.seen.iter().any(|x| x.rpc_method() == Some("prompts/list"))),
        "the double never finished connecting: {:?}",
        server.methods()
    );
}

#[test]
fn initialize_advertises_http_mcp_per_knob() {
    let mut a = setup().spawn();
    let r = a.init();
    assert_eq!(s(at(&r, &["agentCapabilities", "mcpCapabilities"]).unwrap()), r#"{"http":true,"sse":true}"#);
    a.close();
    for (knob, caps) in [
        ("http", r#"{"http":true,"sse":false}"#),
        ("sse", r#"{"http":false,"sse":true}"#),
        ("none", r#"{"http":false,"sse":false}"#),
    ] {
        let mut a = setup().env("CURSOR_DOUBLE_ACP_MCP_CAPS", knob).spawn();
        let r = a.init();
        assert_eq!(s(at(&r, &["agentCapabilities", "mcpCapabilities"]).unwrap()), caps, "{knob}");
        a.close();
    }
    let f = setup().env("CURSOR_DOUBLE_ACP_SESSION_MCP", "sometimes").spawn().wait_exit();
    assert_eq!(f.code, Some(2));
}

#[test]
fn a_session_server_is_connected_like_cursor_does() {
    let server = McpServer::start(&["create_file", "read_file"]);
    let mut a = setup().spawn();
    a.init();
    let sid = session(&mut a, &[server.entry("cb")]);
    connected(&server);
    assert_eq!(
        server.methods(),
        [
            "GET /.well-known/oauth-protected-resource/mcp/0f2c",
            "GET /.well-known/oauth-protected-resource",
            "initialize",
            "notifications/initialized",
            "tools/list",
            "resources/list",
            "prompts/list"
        ]
    );
    let seen = server.seen();
    let init = &seen[2];
    assert_eq!(str_at(init.params().unwrap(), &["clientInfo", "name"]), Some("cursor-vscode"));
    assert_eq!(init.header("mcp-session-id"), None);
    for x in &seen[2..] {
        assert_eq!(x.header("authorization"), Some(TOKEN), "{:?}", x.rpc_method());
        assert_eq!(x.header("content-type"), Some("application/json"));
    }
    for x in &seen[3..] {
        assert_eq!(x.header("mcp-session-id"), Some(SESSION_ID), "{:?}", x.rpc_method());
        assert_eq!(x.header("mcp-protocol-version"), Some("2025-06-18"));
    }
    let f = a.close();
    let t = tools_record(&f);
    assert_eq!(list_values(&t, "mcpServers", "sessionId"), [format!("\"{sid}\"")]);
    assert_eq!(list_values(&t, "mcpServers", "connected"), ["true"]);
    assert_eq!(list_values(&t, "mcpServers", "tools"), [r#"["create_file","read_file"]"#]);
    assert_eq!(list_values(&t, "mcpServers", "visibleTools"), [r#"["create_file","read_file"]"#]);
    assert_eq!(list_values(&t, "mcpServers", "mcpSessionId"), [format!("\"{SESSION_ID}\"")]);
    assert_eq!(
        list_values(&t, "mcpServers", "probes"),
        [
            r#"[{"path":"/.well-known/oauth-protected-resource/mcp/0f2c","status":404},{"path":"/.well-known/oauth-protected-resource","status":404}]"#
        ]
    );
}

/// §2.3 of the research: the update sequence, the permission title, `tools/call`, the next step
/// in the same turn, and an answer that quotes the results.
#[test]
fn a_call_goes_through_cursors_update_sequence() {
    let server = McpServer::start(&["create_file", "read_file"]);
    server.behave("create_file", Behaviour::Text("made /w/a.txt\nmore".into()));
    server.behave("read_file", Behaviour::Text("hi".into()));
    let mut a = setup().spawn();
    a.init();
    let sid = session(&mut a, &[server.entry("cb")]);
    let steps = r#"[{"say":"Creating it.","call":[{"name":"create_file","arguments":{"filePath":"/w/a.txt","content":"hi"}}]},{"call":[{"name":"read_file","arguments":{"filePath":"/w/a.txt"}}]}]"#;
    let (msgs, resp) = drive(&mut a, &sid, &script(steps, ""), "allow-once");
    assert_eq!(stop_reason(&resp), "end_turn");
    assert_eq!(message_text(&msgs), "Creating it.\n\nDone. Results: create_file: made /w/a.txt; read_file: hi");

    let first = str_at(updates(&msgs, "tool_call")[0], &["toolCallId"]).unwrap().to_owned();
    let of_first: Vec<&Json> = msgs
        .iter()
        .filter(|m| {
            str_at(m, &["params", "update", "toolCallId"]) == Some(first.as_str())
                || str_at(m, &["params", "toolCall", "toolCallId"]) == Some(first.as_str())
        })
        .collect();
    let shapes: Vec<String> = of_first
        .iter()
        .map(|m| match str_at(m, &["method"]) {
            Some("session/request_permission") => {
                let tc = at(m, &["params", "toolCall"]).unwrap();
                format!("permission {} {}", str_at(tc, &["title"]).unwrap(), str_at(tc, &["kind"]).unwrap())
            }
            _ => {
                let mut u = at(m, &["params", "update"]).unwrap().clone();
                u.set("toolCallId", "ID".into());
                s(&u)
            }
        })
        .collect();
    assert_eq!(
        shapes,
        [
            r#"{"sessionUpdate":"tool_call","toolCallId":"ID","title":"MCP: tool","kind":"other","status":"pending"}"#,
            r#"{"sessionUpdate":"tool_call_update","toolCallId":"ID","title":"cb: create_file","rawInput":{"providerIdentifier":"cb","toolName":"create_file","args":{"filePath":"/w/a.txt","content":"hi"}}}"#,
            r#"{"sessionUpdate":"tool_call_update","toolCallId":"ID","status":"in_progress"}"#,
            "permission cb-create_file: create_file other",
            r#"{"sessionUpdate":"tool_call_update","toolCallId":"ID","status":"completed","content":[{"type":"content","content":{"type":"text","text":"made /w/a.txt\nmore"}}],"rawOutput":{"success":true,"content":[{"type":"text","text":"made /w/a.txt\nmore"}]}}"#,
        ]
    );
    let calls = server.calls();
    assert_eq!(calls.len(), 2);
    assert_eq!(
        s(calls[0].params().unwrap()),
        r#"{"name":"create_file","arguments":{"filePath":"/w/a.txt","content":"hi"}}"#
    );
    assert_eq!(calls[0].header("mcp-session-id"), Some(SESSION_ID));

    let f = a.close();
    let t = tools_record(&f);
    assert_eq!(list_values(&t, "calls", "outcome"), [r#""result""#, r#""result""#]);
    assert_eq!(list_values(&t, "calls", "server"), [r#""cb""#, r#""cb""#]);
    assert_eq!(list_values(&t, "results", "via"), [r#""mcp""#, r#""mcp""#]);
    assert_eq!(list_values(&t, "results", "text"), [r#""made /w/a.txt\nmore""#, r#""hi""#]);
    assert_eq!(list_values(&t, "permissions", "answer"), [r#""allow-once""#, r#""allow-once""#]);
    assert_eq!(list_values(&t, "permissions", "title")[1], r#""cb-read_file: read_file""#);
}

#[test]
fn allow_always_is_remembered_for_the_session() {
    let server = McpServer::start(&["create_file"]);
    let mut a = setup().spawn();
    a.init();
    let sid = session(&mut a, &[server.entry("cb")]);
    let steps = r#"[{"call":[{"name":"create_file"}]},{"call":[{"name":"create_file"}]}]"#;
    let (msgs, _) = drive(&mut a, &sid, &script(steps, ""), "allow-always");
    assert_eq!(permission_requests(&msgs).len(), 1);
    assert_eq!(server.calls().len(), 2);
    a.close();
}

#[test]
fn an_ignored_or_unapproved_server_leaves_the_tool_unavailable() {
    for knob in ["ignored", "gated"] {
        let server = McpServer::start(&["create_file"]);
        let mut a = setup().env("CURSOR_DOUBLE_ACP_SESSION_MCP", knob).spawn();
        a.init();
        let sid = session(&mut a, &[server.entry("cb")]);
        let (msgs, resp) = drive(&mut a, &sid, &script(r#"[{"call":[{"name":"create_file"}]}]"#, ""), "allow-once");
        assert_eq!(stop_reason(&resp), "end_turn");
        assert_eq!(message_text(&msgs), "The tool \"create_file\" is not available to me here, so I cannot use it.");
        assert!(server.seen().is_empty(), "{knob}: {:?}", server.methods());
        let f = a.close();
        let t = tools_record(&f);
        assert_eq!(list_values(&t, "mcpServers", "policy"), [format!("\"{knob}\"")]);
        assert_eq!(list_values(&t, "mcpServers", "connected"), ["false"]);
    }
}

/// The approval key of the research's formula, computed here independently of the double.
fn approval_key(name: &str, url: &str, root: &str) -> String {
    let hashed = format!(
        r#"{{"path":{},"server":{{"url":{},"headers":{{"Authorization":{}}}}}}}"#,
        Json::from(root).to_compact(),
        Json::from(url).to_compact(),
        Json::from(TOKEN).to_compact()
    );
    format!("{name}-{}", &sha256::hex_digest(hashed.as_bytes())[..16])
}

fn slug(path: &str) -> String {
    let mut out = String::new();
    for c in path.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').to_owned()
}

#[test]
fn a_gated_server_connects_once_the_approvals_file_lists_it() {
    let server = McpServer::start(&["create_file"]);
    let setup = setup().env("CURSOR_DOUBLE_ACP_SESSION_MCP", "gated");
    let mut a = setup.spawn();
    a.init();
    let sid = session(&mut a, &[server.entry("cb")]);
    let text = script(r#"[{"call":[{"name":"create_file"}]}]"#, "");
    let (msgs, _) = drive(&mut a, &sid, &text, "allow-once");
    assert!(message_text(&msgs).contains("is not available"));
    assert!(server.seen().is_empty());
    // The bridge writes the approval (HOME/.cursor is the data folder here) and tries again.
    let file = Path::new(&setup.home).join(".cursor/projects").join(slug(&a.cwd)).join("mcp-approvals.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, format!("[\"{}\"]", approval_key("cb", &server.url, &a.cwd))).unwrap();
    let (msgs, _) = drive(&mut a, &sid, "again", "allow-once");
    assert_eq!(message_text(&msgs), "Done. Results: create_file: create_file ok");
    assert_eq!(server.calls().len(), 1);
    // A new session finds it approved at once.
    let _sid2 = session(&mut a, &[server.entry("cb")]);
    assert!(server.wait_for(WAIT, |st| st.seen.iter().filter(|x| x.rpc_method() == Some("initialize")).count() == 2));
    let f = a.close();
    let t = tools_record(&f);
    assert_eq!(list_values(&t, "mcpServers", "connected"), ["false", "true", "true"]);
    assert_eq!(
        list_values(&t, "mcpServers", "approvalKey")[0],
        format!("\"{}\"", approval_key("cb", &server.url, &setup.ws()))
    );
}

/// Only the first 40 listed tools, and only those whose server + tool name fit in 60 characters,
/// are the model's (knob to lift both).
#[test]
fn the_model_sees_forty_tools_with_short_names() {
    let long = "t".repeat(59); // "cb" + 59 = 61 characters
    let mut names: Vec<String> = vec![long.clone()];
    names.extend((0..45).map(|i| format!("t{i:02}")));
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    for (knob, visible) in [("on", [true, false, false]), ("off", [true, true, true])] {
        let server = McpServer::start(&refs);
        let mut a =
            setup().env("CURSOR_DOUBLE_ACP_MCP_TOOL_LIMITS", knob).env("CURSOR_DOUBLE_ACP_MCP_ASK", "never").spawn();
        a.init();
        for (tool, seen) in ["t38", "t39", long.as_str()].iter().zip(visible) {
            // A session per call: a script plays from the chat's first prompt on.
            let sid = session(&mut a, &[server.entry("cb")]);
            let (msgs, _) =
                drive(&mut a, &sid, &script(&format!(r#"[{{"call":[{{"name":"{tool}"}}]}}]"#), ""), "allow-once");
            let text = message_text(&msgs);
            assert_eq!(!text.contains("is not available"), seen, "{knob} {tool}: {text}");
        }
        let f = a.close();
        let vis = &list_values(&tools_record(&f), "mcpServers", "visibleTools")[0];
        let count = Json::parse(vis).map(|v| if let Json::Arr(i) = v { i.len() } else { 0 }).unwrap();
        assert_eq!(count, if knob == "on" { 39 } else { 46 });
    }
}

#[test]
fn a_rejected_call_is_asked_again_once_then_answered_in_text() {
    for (extra, asked) in [("", 2), (r#","retryRejectedOnce":false"#, 1)] {
        let server = McpServer::start(&["create_file"]);
        let mut a = setup().spawn();
        a.init();
        let sid = session(&mut a, &[server.entry("cb")]);
        let (msgs, resp) = drive(&mut a, &sid, &script(r#"[{"call":[{"name":"create_file"}]}]"#, extra), "reject-once");
        assert_eq!(stop_reason(&resp), "end_turn");
        assert_eq!(permission_requests(&msgs).len(), asked);
        assert_eq!(updates(&msgs, "tool_call").len(), asked);
        assert_eq!(
            message_text(&msgs),
            "I could not use the tool \"create_file\": the permission request was rejected."
        );
        assert!(server.calls().is_empty());
        let rejected =
            updates(&msgs, "tool_call_update").iter().filter(|u| at(u, &["rawOutput", "rejected"]).is_some()).count();
        assert_eq!(rejected, asked);
        a.close();
    }
}

/// Who asks: the knob and the permission files (`Mcp(server:tool)` entries, deny wins).
#[test]
fn permission_questions_follow_the_knob_and_the_configuration() {
    // (knob, project cli.json, user cli-config.json, questions, tool runs)
    let cases: [(&str, &str, &str, usize, bool); 6] = [
        ("allowlist", "", "", 1, true),
        ("allowlist", r#"{"permissions":{"allow":["Mcp(cb:*)"]}}"#, "", 1, true),
        ("unless-allowed", r#"{"permissions":{"allow":["Mcp(cb:*)"]}}"#, "", 0, true),
        ("never", "", "", 0, true),
        ("allowlist", "", r#"{"approvalMode":"unrestricted"}"#, 0, true),
        ("never", r#"{"permissions":{"allow":["Mcp(*)"],"deny":["Mcp(cb:create_file)"]}}"#, "", 0, false),
    ];
    for (knob, project, user, questions, runs) in cases {
        let server = McpServer::start(&["create_file"]);
        let setup = setup().env("CURSOR_DOUBLE_ACP_MCP_ASK", knob);
        let dot = Path::new(&setup.home).join(".cursor");
        std::fs::create_dir_all(&dot).unwrap();
        if !project.is_empty() {
            std::fs::write(dot.join("cli.json"), project).unwrap();
        }
        if !user.is_empty() {
            std::fs::write(dot.join("cli-config.json"), user).unwrap();
        }
        let mut a = setup.spawn();
        a.init();
        let sid = session(&mut a, &[server.entry("cb")]);
        let (msgs, _) = drive(&mut a, &sid, &script(r#"[{"call":[{"name":"create_file"}]}]"#, ""), "allow-once");
        let what = format!("{knob} {project} {user}");
        assert_eq!(permission_requests(&msgs).len(), questions, "{what}");
        assert_eq!(server.calls().len(), usize::from(runs), "{what}");
        if !runs {
            assert_eq!(message_text(&msgs), format!("I could not use the tool \"create_file\": {DENIED}"));
        }
        a.close();
    }
}

#[test]
fn a_call_that_takes_too_long_fails_with_request_timed_out() {
    let server = McpServer::start(&["create_file"]);
    server.behave("create_file", Behaviour::Hang);
    let mut a = setup().env("CURSOR_DOUBLE_ACP_MCP_ASK", "never").spawn();
    a.init();
    let sid = session(&mut a, &[server.entry("cb")]);
    let (msgs, resp) = drive(
        &mut a,
        &sid,
        &script(r#"[{"call":[{"name":"create_file"}]}]"#, r#","mcpCallTimeoutMs":300"#),
        "allow-once",
    );
    assert_eq!(stop_reason(&resp), "end_turn");
    assert_eq!(message_text(&msgs), "The tool \"create_file\" failed: MCP error -32001: Request timed out");
    let last = updates(&msgs, "tool_call_update").last().copied().unwrap().clone();
    assert_eq!(str_at(&last, &["status"]), Some("failed"));
    assert_eq!(
        s(at(&last, &["rawOutput"]).unwrap()),
        r#"{"success":false,"error":"MCP error -32001: Request timed out"}"#
    );
    // The server hears that the client gave up on that request.
    let call_id = server.calls()[0].body.as_ref().unwrap().get("id").unwrap().clone();
    assert!(server.wait_for(WAIT, |st| st.aborted_calls == 1
        && st.seen.iter().any(|x| x.rpc_method() == Some("notifications/cancelled")
            && x.params().and_then(|p| p.get("requestId")) == Some(&call_id))));
    let f = a.close();
    assert_eq!(list_values(&tools_record(&f), "calls", "outcome"), [r#""timeout""#]);
}

#[test]
fn cancel_during_a_call_aborts_it() {
    let server = McpServer::start(&["create_file"]);
    server.behave("create_file", Behaviour::Hang);
    let mut a = setup().env("CURSOR_DOUBLE_ACP_MCP_ASK", "never").spawn();
    a.init();
    let sid = session(&mut a, &[server.entry("cb")]);
    let id = a.prompt(&sid, &script(r#"[{"call":[{"name":"create_file"}]}]"#, ""));
    assert!(server.wait_for(WAIT, |st| st.in_flight == 1));
    a.notify("session/cancel", &format!(r#"{{"sessionId":"{sid}"}}"#));
    let (_, resp) = a.until_response(id, WAIT);
    assert_eq!(stop_reason(&resp), "cancelled");
    assert!(server.wait_for(WAIT, |st| st.aborted_calls == 1
        && st.seen.iter().any(|x| x.rpc_method() == Some("notifications/cancelled"))));
    // The session takes the next prompt: the script's step is played again and cancelled again.
    let id = a.prompt(&sid, "again");
    assert!(server.wait_for(WAIT, |st| st.in_flight == 1 && st.aborted_calls == 1));
    a.notify("session/cancel", &format!(r#"{{"sessionId":"{sid}"}}"#));
    let (_, resp) = a.until_response(id, WAIT);
    assert_eq!(stop_reason(&resp), "cancelled");
    let f = a.close();
    assert_eq!(list_values(&tools_record(&f), "calls", "outcome"), [r#""cancelled""#, r#""cancelled""#]);
}

/// A call the bridge releases at its deadline ends the turn; the real result then comes as a
/// prompt-protocol `TOOL_RESULT` in the same session and the script goes on.
#[test]
fn a_pending_result_ends_the_turn_and_arrives_as_a_prompt() {
    let server = McpServer::start(&["create_file"]);
    server.behave("create_file", Behaviour::Text("result pending: it arrives in the next message".into()));
    let mut a = setup().env("CURSOR_DOUBLE_ACP_MCP_ASK", "never").spawn();
    a.init();
    let sid = session(&mut a, &[server.entry("cb")]);
    let (msgs, resp) =
        drive(&mut a, &sid, &script(r#"[{"call":[{"name":"create_file"}]},{"say":"Next step."}]"#, ""), "allow-once");
    assert_eq!(stop_reason(&resp), "end_turn");
    assert_eq!(message_text(&msgs), "The tool \"create_file\" is still running; I will wait for its result.");
    let (msgs, _) = a.turn(&sid, "TOOL_RESULT (call_id=call_1, name=create_file):\nthe real result\nEND_TOOL_RESULT");
    assert_eq!(message_text(&msgs), "Next step.");
    let f = a.close();
    let t = tools_record(&f);
    assert_eq!(list_values(&t, "results", "via"), [r#""mcp""#, r#""prompt""#]);
    assert_eq!(list_values(&t, "results", "pending"), ["true", ""]);
    assert_eq!(list_values(&t, "calls", "outcome"), [r#""pending""#]);
}

#[test]
fn the_calls_of_one_step_run_together_or_one_after_another() {
    for (extra, together) in [("", true), (r#","parallelMcpCalls":false"#, false)] {
        let server = McpServer::start(&["a", "b"]);
        server.behave("a", Behaviour::Delayed(Duration::from_millis(300), "A".into()));
        server.behave("b", Behaviour::Delayed(Duration::from_millis(300), "B".into()));
        let mut a = setup().env("CURSOR_DOUBLE_ACP_MCP_ASK", "never").spawn();
        a.init();
        let sid = session(&mut a, &[server.entry("cb")]);
        let (msgs, _) = drive(&mut a, &sid, &script(r#"[{"call":[{"name":"a"},{"name":"b"}]}]"#, extra), "allow-once");
        assert_eq!(message_text(&msgs), "Done. Results: a: A; b: B");
        assert_eq!(server.max_in_flight(), if together { 2 } else { 1 }, "{extra}");
        // One after another: the second call starts only once the first has completed.
        let kinds: Vec<String> = msgs
            .iter()
            .filter(|m| kind_of(m).starts_with("tool_call"))
            .map(|m| {
                let u = at(m, &["params", "update"]).unwrap();
                format!("{}:{}", kind_of(m), str_at(u, &["status"]).unwrap_or("-"))
            })
            .collect();
        let second_start = kinds.iter().rposition(|k| k == "tool_call:pending").unwrap();
        let first_done = kinds.iter().position(|k| k == "tool_call_update:completed").unwrap();
        assert_eq!(first_done < second_start, !together, "{kinds:?}");
        a.close();
    }
}

#[test]
fn streamed_answers_error_results_and_rpc_errors() {
    let server = McpServer::start(&["ok", "bad", "broken"]);
    server.sse();
    server.behave("ok", Behaviour::Text("fine".into()));
    server.behave("bad", Behaviour::IsError("EACCES".into()));
    server.behave("broken", Behaviour::RpcError(-32602, "bad args".into()));
    let mut a = setup().env("CURSOR_DOUBLE_ACP_MCP_ASK", "never").spawn();
    a.init();
    let sid = session(&mut a, &[server.entry("cb")]);
    let (msgs, _) = drive(&mut a, &sid, &script(r#"[{"call":[{"name":"ok"}]},{"call":[{"name":"bad"}]}]"#, ""), "x");
    assert_eq!(message_text(&msgs), "Done. Results: ok: fine; bad (error): EACCES");
    let sid = session(&mut a, &[server.entry("cb")]);
    let (msgs, _) = drive(&mut a, &sid, &script(r#"[{"call":[{"name":"broken"}]}]"#, ""), "x");
    assert_eq!(message_text(&msgs), "The tool \"broken\" failed: MCP error -32602: bad args");
    a.close();
}

#[test]
fn structured_content_hangs_the_call_with_the_knob() {
    for (knob, text) in
        [("ok", "Done. Results: s: plain"), ("hang", "The tool \"s\" failed: MCP error -32001: Request timed out")]
    {
        let server = McpServer::start(&["s"]);
        server.behave("s", Behaviour::Structured("plain".into()));
        let mut a =
            setup().env("CURSOR_DOUBLE_ACP_MCP_ASK", "never").env("CURSOR_DOUBLE_ACP_MCP_STRUCTURED", knob).spawn();
        a.init();
        let sid = session(&mut a, &[server.entry("cb")]);
        let (msgs, _) = drive(&mut a, &sid, &script(r#"[{"call":[{"name":"s"}]}]"#, r#","mcpCallTimeoutMs":300"#), "x");
        assert_eq!(message_text(&msgs), text, "{knob}");
        a.close();
    }
}

#[test]
fn connecting_can_wait_for_the_first_prompt() {
    let server = McpServer::start(&["create_file"]);
    let mut a =
        setup().env("CURSOR_DOUBLE_ACP_MCP_CONNECT", "prompt").env("CURSOR_DOUBLE_ACP_MCP_ASK", "never").spawn();
    a.init();
    let sid = session(&mut a, &[server.entry("cb")]);
    assert!(!server.wait_for(SHORT, |st| !st.seen.is_empty()), "connected before any prompt");
    let (msgs, _) = drive(&mut a, &sid, &script(r#"[{"call":[{"name":"create_file"}]}]"#, ""), "x");
    assert_eq!(message_text(&msgs), "Done. Results: create_file: create_file ok");
    let methods = server.methods();
    let listed = methods.iter().position(|m| m == "tools/list").unwrap();
    let called = methods.iter().position(|m| m == "tools/call").unwrap();
    assert!(listed < called, "{methods:?}");
    a.close();
}

/// `session/load` in another process connects the servers it names again; entries the double does
/// not connect (stdio) are on record.
#[test]
fn a_loaded_session_connects_again_and_other_transports_are_noted() {
    let server = McpServer::start(&["create_file"]);
    let setup = setup().env("CURSOR_DOUBLE_ACP_MCP_ASK", "never");
    let mut a = setup.spawn();
    a.init();
    let stdio = r#"{"name":"fs","command":"mcp-fs","args":[],"env":[]}"#.to_owned();
    let sid = session(&mut a, &[server.entry("cb"), stdio]);
    connected(&server);
    let f = a.close();
    let t = tools_record(&f);
    assert_eq!(list_values(&t, "mcpServers", "name"), [r#""fs""#, r#""cb""#]);
    assert_eq!(list_values(&t, "mcpServers", "type"), [r#""stdio""#, r#""http""#]);
    let mut b = setup.spawn();
    b.init();
    let params = format!(r#"{{"sessionId":"{sid}","cwd":"{}","mcpServers":[{}]}}"#, b.cwd, server.entry("cb"));
    b.result("session/load", &params);
    let (msgs, _) = drive(&mut b, &sid, &script(r#"[{"call":[{"name":"create_file"}]}]"#, ""), "x");
    assert_eq!(message_text(&msgs), "Done. Results: create_file: create_file ok");
    assert_eq!(server.seen().iter().filter(|x| x.rpc_method() == Some("initialize")).count(), 2);
    b.close();
}

/// A builtin tool over ACP: denied by the session folder's cli.json, or run anyway with the bypass.
#[test]
fn builtin_tools_over_acp() {
    let setup = setup();
    let dot = Path::new(&setup.home).join(".cursor");
    std::fs::create_dir_all(&dot).unwrap();
    std::fs::write(dot.join("cli.json"), r#"{"permissions":{"deny":["Write(**)"]}}"#).unwrap();
    let mut a = setup.spawn();
    a.init();
    let sid = session(&mut a, &[]);
    let edit = r#"[{"builtin":{"kind":"edit","path":"x.txt","content":"hello"},"say":"Tried."}]"#;
    let (msgs, _) = drive(&mut a, &sid, &script(edit, ""), "x");
    let last = updates(&msgs, "tool_call_update").last().copied().unwrap().clone();
    assert_eq!(str_at(&last, &["rawOutput", "rejected", "reason"]), Some(DENIED));
    let file = Path::new(&setup.home).join("x.txt");
    assert!(!file.exists());
    let sid2 = session(&mut a, &[]);
    let (msgs, _) = drive(&mut a, &sid2, &script(edit, r#","builtinBypass":true"#), "x");
    let last = updates(&msgs, "tool_call_update").last().copied().unwrap().clone();
    assert_eq!(str_at(&last, &["status"]), Some("completed"));
    assert!(last.get("rawOutput").is_none_or(|r| r.get("rejected").is_none()));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "hello");
    let f = a.close();
    assert_eq!(list_values(&tools_record(&f), "builtins", "outcome"), [r#""denied""#, r#""bypassed""#]);
}

/// A server that never answers `initialize` is given up after the connect timeout: its tools are
/// not available, and stderr and the record say why.
#[test]
fn a_server_that_does_not_answer_is_given_up() {
    let server = McpServer::start(&["create_file"]);
    server.hang_on("initialize");
    let mut a = setup().env("CURSOR_DOUBLE_ACP_MCP_CONNECT_TIMEOUT_MS", "300").spawn();
    a.init();
    let sid = session(&mut a, &[server.entry("cb")]);
    let (msgs, resp) = drive(&mut a, &sid, &script(r#"[{"call":[{"name":"create_file"}]}]"#, ""), "x");
    assert_eq!(stop_reason(&resp), "end_turn");
    assert!(message_text(&msgs).contains("is not available"));
    let f = a.close();
    assert!(f.stderr.contains("cursor-agent-double: MCP server cb: initialize:"), "{}", f.stderr);
    let t = tools_record(&f);
    assert_eq!(list_values(&t, "mcpServers", "connected"), ["false"]);
    assert!(list_values(&t, "mcpServers", "error")[0].starts_with("\"initialize: "));
}

/// The login knob over ACP: a private config folder loses a login kept there.
#[test]
fn a_login_kept_in_the_config_dir_is_lost_with_a_private_one() {
    let config = temp_path("config");
    std::fs::create_dir_all(&config).unwrap();
    for (knob, ok) in [("0", true), ("1", false)] {
        let mut a = setup()
            .env("CURSOR_CONFIG_DIR", config.to_str().unwrap())
            .env("CURSOR_DOUBLE_AUTH_IN_CONFIG_DIR", knob)
            .spawn();
        a.init();
        let params = a.new_session_params();
        let (_, r) = a.call("session/new", &params);
        assert_eq!(r.get("result").is_some(), ok, "{knob}: {}", s(&r));
        a.close();
    }
    let _ = std::fs::remove_dir_all(config);
}

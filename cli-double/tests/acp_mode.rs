//! `cursor-agent-double [flags] acp`: the built double driven over its pipes by a small line-based
//! JSON-RPC client, as the bridge's ACP backend will drive the real `agent acp`.

mod common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::acp::*;
use common::*;

// ---------------------------------------------------------------------------------------------

#[test]
fn initialize_answers_cursors_shape_and_its_own_version() {
    let mut a = setup().spawn();
    assert_eq!(s(&a.init()), INITIALIZE);
    // Only version 1 exists: any other number gets 1 back; a string is a zod error (acpx #140).
    let r = a.result("initialize", r#"{"protocolVersion":7}"#);
    assert_eq!(r.get("protocolVersion"), Some(&Json::from(1u64)));
    let e = a.error("initialize", r#"{"protocolVersion":"2025-03-26"}"#);
    assert_eq!(
        s(&e),
        r#"{"code":-32603,"message":"Internal error","data":[{"expected":"number","code":"invalid_type","path":["protocolVersion"],"message":"Invalid input"}]}"#
    );
    let f = a.close();
    assert_eq!(f.code, Some(0));
    assert!(f.stderr.is_empty(), "{}", f.stderr);

    // Newer builds may advertise resume/close (knob).
    let mut a = setup().env("CURSOR_DOUBLE_ACP_SESSION_CAPS", "list,resume,close").spawn();
    let r = a.init();
    assert_eq!(
        s(at(&r, &["agentCapabilities", "sessionCapabilities"]).unwrap()),
        r#"{"list":{},"resume":{},"close":{}}"#
    );
    a.close();
}

#[test]
fn session_new_offers_modes_legacy_models_and_config_options() {
    let mut a = setup().spawn();
    a.init();
    let params = a.new_session_params();
    let (before, resp) = a.call("session/new", &params);
    assert!(before.is_empty());
    let r = resp.get("result").unwrap();
    let sid = str_at(r, &["sessionId"]).unwrap().to_owned();
    assert!(is_uuid_v4(&sid), "{sid}");
    let keys: Vec<&str> = r.as_object().unwrap().iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, ["sessionId", "modes", "models", "configOptions"]);
    assert_eq!(str_at(r, &["modes", "currentModeId"]), Some("agent"));
    assert_eq!(values(at(r, &["modes", "availableModes"]).unwrap(), "id"), ["agent", "plan", "ask"]);
    assert_eq!(str_at(r, &["models", "currentModelId"]), Some("default[]"));
    let legacy = values(at(r, &["models", "availableModels"]).unwrap(), "modelId");
    assert_eq!(
        legacy,
        [
            "default[]",
            "composer-2.5[fast=false]",
            "composer-2.5[fast=true]",
            "sonnet-5[thinking=true]",
            "opus-5[]",
            "claude-opus-4-8[context=1m]",
            "gpt-5.6-sol[]",
            "grok-4.6[]",
            "gemini-3.7-flash[]",
            "kimi-k2.5[]"
        ]
    );
    let options = r.get("configOptions").unwrap();
    assert_eq!(values(options, "id"), ["mode", "model"]);
    let model = config(options, "model");
    assert_eq!(str_at(model, &["type"]), Some("select"));
    assert_eq!(str_at(model, &["category"]), Some("model"));
    assert_eq!(str_at(model, &["currentValue"]), Some("default[]"));
    assert_eq!(values(model.get("options").unwrap(), "value"), legacy);
    assert_eq!(values(config(options, "mode").get("options").unwrap(), "value"), ["agent", "plan", "ask"]);
    // The commands update follows the answer (default timing).
    let next = a.next(LONG).unwrap();
    assert_eq!(kind_of(&next), "available_commands_update");
    assert_eq!(str_at(&next, &["params", "sessionId"]), Some(sid.as_str()));
    // The catalogue by Cursor's own method: the same values.
    let list = a.result("cursor/list_available_models", "{}");
    assert_eq!(values(list.get("models").unwrap(), "value"), legacy);
    a.close();
}

#[test]
fn parameterized_picker_offers_bases_and_their_selects() {
    let mut a = setup().spawn();
    a.result("initialize", r#"{"protocolVersion":1,"clientCapabilities":{"_meta":{"parameterizedModelPicker":true}}}"#);
    let params = a.new_session_params();
    let r = a.result("session/new", &params);
    let sid = str_at(&r, &["sessionId"]).unwrap().to_owned();
    let options = r.get("configOptions").unwrap();
    assert_eq!(values(options, "id"), ["mode", "model"]); // Auto has no selects
    assert_eq!(
        values(config(options, "model").get("options").unwrap(), "value"),
        [
            "default",
            "composer-2.5",
            "sonnet-5",
            "opus-5",
            "claude-opus-4-8",
            "gpt-5.6-sol",
            "grok-4.6",
            "gemini-3.7-flash",
            "kimi-k2.5"
        ]
    );
    let r = a.result(
        "session/set_config_option",
        &format!(r#"{{"sessionId":"{sid}","configId":"model","value":"composer-2.5"}}"#),
    );
    let options = r.get("configOptions").unwrap();
    assert_eq!(values(options, "id"), ["mode", "model", "effort", "fast"]);
    assert_eq!(str_at(config(options, "effort"), &["category"]), Some("thought_level"));
    assert_eq!(values(config(options, "fast").get("options").unwrap(), "value"), ["false", "true"]);
    let r =
        a.result("session/set_config_option", &format!(r#"{{"sessionId":"{sid}","configId":"fast","value":"true"}}"#));
    assert_eq!(str_at(config(r.get("configOptions").unwrap(), "fast"), &["currentValue"]), Some("true"));
    // The legacy wire ids are not values of this picker.
    let e = a.error(
        "session/set_config_option",
        &format!(r#"{{"sessionId":"{sid}","configId":"model","value":"composer-2.5[fast=true]"}}"#),
    );
    assert_eq!(str_at(&e, &["message"]), Some("Invalid model value: composer-2.5[fast=true]"));
    // cursor/list_available_models carries each base's selects.
    let list = a.result("cursor/list_available_models", "{}");
    let models = list.get("models").unwrap();
    let composer = match models {
        Json::Arr(items) => items[1].clone(),
        _ => unreachable!(),
    };
    assert_eq!(values(composer.get("configOptions").unwrap(), "id"), ["effort", "fast"]);
    a.close();

    // Knob: a build that ignores the flag.
    let mut a = setup().env("CURSOR_DOUBLE_ACP_PARAMETERIZED", "off").spawn();
    a.result("initialize", r#"{"protocolVersion":1,"clientCapabilities":{"_meta":{"parameterizedModelPicker":true}}}"#);
    let params = a.new_session_params();
    let r = a.result("session/new", &params);
    assert_eq!(str_at(&r, &["models", "currentModelId"]), Some("default[]"));
    a.close();
}

#[test]
fn launch_flags_pin_model_and_mode() {
    let mut a = setup().flags(&["--trust", "--model", "composer-2.5-fast", "--mode", "ask"]).spawn();
    a.init();
    let params = a.new_session_params();
    let r = a.result("session/new", &params);
    assert_eq!(str_at(&r, &["models", "currentModelId"]), Some("composer-2.5[fast=true]"));
    assert_eq!(str_at(&r, &["modes", "currentModeId"]), Some("ask"));
    a.close();
}

#[test]
fn available_commands_update_timing_knob() {
    // (knob, where the update must be: index of the marker it follows)
    for timing in ["before-response", "after-response", "after-prompt", "after-turn", "never"] {
        let mut a = setup().env("CURSOR_DOUBLE_ACP_COMMANDS_UPDATE", timing).spawn();
        a.init();
        let params = a.new_session_params();
        let id = a.request("session/new", &params);
        let (before_new, new) = a.until_response(id, LONG);
        let sid = str_at(&new, &["result", "sessionId"]).unwrap().to_owned();
        let (during, resp) = a.turn(&sid, "[[double:{\"answer\":\"ok\"}]] hi");
        assert_eq!(stop_reason(&resp), "end_turn");
        let f = a.close();
        let cmd = |ms: &[Json]| ms.iter().any(|m| kind_of(m) == "available_commands_update");
        let (in_before, in_during, in_after) = (cmd(&before_new), cmd(&during), cmd(&f.rest));
        let expect = match timing {
            "before-response" => (true, false, false),
            // after the answer: it is read with the turn's messages
            "after-response" => (false, true, false),
            "after-prompt" => (false, true, false),
            "after-turn" => (false, false, true),
            _ => (false, false, false),
        };
        assert_eq!((in_before, in_during, in_after), expect, "{timing}");
        if timing == "after-prompt" {
            assert_eq!(kind_of(&during[0]), "available_commands_update");
        }
        if timing == "after-response" {
            assert_eq!(kind_of(&during[0]), "available_commands_update");
        }
    }
}

#[test]
fn a_turn_streams_thoughts_plan_todos_tools_chunks_and_usage() {
    let mut a = setup().spawn();
    a.init();
    let sid = a.new_session();
    assert_eq!(kind_of(&a.next(LONG).unwrap()), "available_commands_update");
    let directive = r#"[[double:{"thinking":"Looking at app.ts","segments":["I'll read it. ","Done: v2."],"tools":[{"kind":"read"},{"kind":"edit"},{"kind":"execute","args":{"command":"npm test"},"output":"1 passed\n"}],"todos":["read","edit"],"plan":["Read app.ts","Bump the version"],"usageUpdate":{"cost":{"amount":0.01,"currency":"USD"}},"chunkChars":4}]]"#;
    let (ms, resp) = a.turn(&sid, &format!("{directive}\nBump the version"));
    assert_eq!(stop_reason(&resp), "end_turn");
    assert_eq!(
        kinds(&ms),
        [
            "agent_thought_chunk",
            "plan",
            "cursor/update_todos",
            "agent_message_chunk",
            "tool_call",
            "tool_call_update",
            "agent_message_chunk",
            "tool_call",
            "tool_call_update",
            "tool_call",
            "tool_call_update",
            "plan",
            "usage_update"
        ]
    );
    assert_eq!(message_text(&ms), "I'll read it. Done: v2.");
    let thoughts: String = ms
        .iter()
        .filter(|m| kind_of(m) == "agent_thought_chunk")
        .map(|m| str_at(m, &["params", "update", "content", "text"]).unwrap())
        .collect();
    assert_eq!(thoughts, "Looking at app.ts");
    // cursor/update_todos carries no sessionId.
    let todos = ms.iter().find(|m| kind_of(m) == "cursor/update_todos").unwrap();
    assert!(at(todos, &["params", "sessionId"]).is_none());
    assert_eq!(values(at(todos, &["params", "todos"]).unwrap(), "content"), ["read", "edit"]);
    // Every session/update names the session.
    assert!(ms
        .iter()
        .filter(|m| str_at(m, &["method"]) == Some("session/update"))
        .all(|m| str_at(m, &["params", "sessionId"]) == Some(sid.as_str())));
    let calls: Vec<&Json> = ms.iter().filter(|m| kind_of(m) == "tool_call").collect();
    let tool_kinds: Vec<&str> = calls.iter().map(|m| str_at(m, &["params", "update", "kind"]).unwrap()).collect();
    assert_eq!(tool_kinds, ["read", "edit", "execute"]);
    assert_eq!(str_at(calls[2], &["params", "update", "title"]), Some("`npm test`"));
    let statuses: Vec<&str> = ms
        .iter()
        .filter(|m| kind_of(m) == "tool_call_update")
        .map(|m| str_at(m, &["params", "update", "status"]).unwrap())
        .collect();
    assert_eq!(statuses, ["in_progress", "completed"].repeat(3));
    let edit_done = ms.iter().filter(|m| kind_of(m) == "tool_call_update").nth(3).unwrap();
    match at(edit_done, &["params", "update", "content"]) {
        Some(Json::Arr(items)) => assert_eq!(str_at(&items[0], &["type"]), Some("diff")),
        other => panic!("edit content: {other:?}"),
    }
    let last_plan = ms.iter().rev().find(|m| kind_of(m) == "plan").unwrap();
    assert_eq!(values(at(last_plan, &["params", "update", "entries"]).unwrap(), "status"), ["completed", "completed"]);
    let usage = ms.iter().find(|m| kind_of(m) == "usage_update").unwrap();
    assert_eq!(str_at(usage, &["params", "update", "cost", "currency"]), Some("USD"));
    // Default turn: `Echo: ` + the last line, in several chunks.
    let (ms, resp) = a.turn(&sid, "what is foo?");
    assert_eq!(kinds(&ms), ["agent_message_chunk"]);
    assert!(ms.len() > 1);
    assert_eq!(message_text(&ms), "Echo: what is foo?");
    assert_eq!(stop_reason(&resp), "end_turn");
    a.close();
}

#[test]
fn token_counts_in_the_answer_by_knob_and_each_turns_mode_model_and_end_in_the_store() {
    // Default: Cursor's answer has no token counts (docs/cursor-acp.md §13 #6).
    let plain = setup();
    let mut a = plain.spawn();
    a.init();
    let sid = a.new_session();
    let (_, resp) = a.turn(&sid, "hi");
    assert!(at(&resp, &["result", "usage"]).is_none(), "{}", s(&resp));
    a.close();

    let counted = setup().env("CURSOR_DOUBLE_ACP_PROMPT_USAGE", "tokens");
    let mut a = counted.spawn();
    a.init();
    let sid = a.new_session();
    a.result("session/set_mode", &format!(r#"{{"sessionId":"{sid}","modeId":"ask"}}"#));
    let (_, resp) = a.turn(&sid, &format!("{}\nwhat is foo?", "x".repeat(400)));
    let usage = at(&resp, &["result", "usage"]).expect("usage in the answer");
    let n = |k: &str| match usage.get(k) {
        Some(Json::Num(n)) => n.as_u64().unwrap(),
        other => panic!("{k}: {other:?}"),
    };
    // Print mode's formula: 1000 + prompt/4 in, streamed/4 out ("Echo: what is foo?" is 18).
    assert_eq!(n("inputTokens"), 1000 + 413 / 4);
    assert_eq!(n("outputTokens"), 4);
    assert_eq!(n("totalTokens"), n("inputTokens") + n("outputTokens"));
    // A cancelled turn is stored with what it streamed and its end.
    let id = a.prompt(&sid, r#"[[double:{"answer":"slowly, slowly","chunkChars":2,"deltaDelayMs":300}]] slow"#);
    while kind_of(&a.next(LONG).expect("a chunk")) != "agent_message_chunk" {}
    a.notify("session/cancel", &format!(r#"{{"sessionId":"{sid}"}}"#));
    let (_, resp) = a.until_response(id, LONG);
    assert_eq!(stop_reason(&resp), "cancelled");
    a.close();
    let file = counted.home.join(".cursor/acp-sessions").join(&sid).join("cursor-agent-double.json");
    let stored = j(&std::fs::read_to_string(&file).unwrap());
    let turns = stored.get("turns").expect("the stored turns");
    assert_eq!(values(turns, "mode"), ["ask", "ask"]);
    assert_eq!(values(turns, "stopReason"), ["end_turn", "cancelled"]);
    assert_eq!(values(turns, "model"), ["default[]", "default[]"]);
    let streamed = &values(turns, "agent")[1];
    assert!(!streamed.is_empty() && streamed.len() < "slowly, slowly".len(), "{streamed:?}");
}

#[test]
fn permission_requests_offer_cursors_three_options() {
    // (answer to the request, knob for rejected status, final status, rejected?)
    let cases = [
        (r#"{"outcome":{"outcome":"selected","optionId":"allow-once"}}"#, "completed", "completed", false),
        (r#"{"outcome":{"outcome":"selected","optionId":"reject-once"}}"#, "completed", "completed", true),
        (r#"{"outcome":{"outcome":"cancelled"}}"#, "completed", "completed", true),
        (r#"{"outcome":{"outcome":"selected","optionId":"reject-once"}}"#, "failed", "failed", true),
    ];
    for (answer, knob, status, rejected) in cases {
        let mut a = setup().env("CURSOR_DOUBLE_ACP_REJECTED_STATUS", knob).spawn();
        a.init();
        let sid = a.new_session();
        let id = a.prompt(
            &sid,
            r#"[[double:{"permissionQuery":true,"tools":[{"kind":"shell","args":{"command":"rm -rf build"}}]}]] clean"#,
        );
        let req = loop {
            let m = a.next(LONG).expect("a permission request");
            if str_at(&m, &["method"]) == Some("session/request_permission") {
                break m;
            }
        };
        assert_eq!(str_at(&req, &["params", "sessionId"]), Some(sid.as_str()));
        assert_eq!(str_at(&req, &["params", "toolCall", "kind"]), Some("execute"));
        let options = at(&req, &["params", "options"]).unwrap();
        assert_eq!(values(options, "optionId"), ["allow-once", "allow-always", "reject-once"]);
        assert_eq!(values(options, "kind"), ["allow_once", "allow_always", "reject_once"]);
        a.reply(req.get("id").unwrap(), answer);
        let (ms, resp) = a.until_response(id, LONG);
        assert_eq!(stop_reason(&resp), "end_turn");
        let last = ms.iter().rev().find(|m| kind_of(m) == "tool_call_update").unwrap();
        assert_eq!(str_at(last, &["params", "update", "status"]), Some(status), "{answer}");
        assert_eq!(at(last, &["params", "update", "rawOutput", "rejected"]).is_some(), rejected, "{answer}");
        let f = a.close();
        let sent = at(f.exit_record(), &["acp", "sentRequests"]).unwrap();
        assert_eq!(values(sent, "method"), ["session/request_permission"]);
        assert!(s(sent).contains("\"answered\":true"));
    }

    // allow-always: the same command is not asked about again in the session.
    let mut a = setup().spawn();
    a.init();
    let sid = a.new_session();
    let id = a.prompt(
        &sid,
        r#"[[double:{"permissionQuery":true,"tools":[{"args":{"command":"ls"}},{"args":{"command":"ls"}}]}]] list"#,
    );
    let mut asked = 0;
    let resp = loop {
        let m = a.next(LONG).expect("messages");
        if str_at(&m, &["method"]) == Some("session/request_permission") {
            asked += 1;
            a.reply(m.get("id").unwrap(), r#"{"outcome":{"outcome":"selected","optionId":"allow-always"}}"#);
        } else if m.get("id") == Some(&Json::from(id)) && m.get("method").is_none() {
            break m;
        }
    };
    assert_eq!((asked, stop_reason(&resp)), (1, "end_turn"));
    a.close();
}

#[test]
fn cursor_requests_block_the_turn_until_answered() {
    let mut a = setup().env("CURSOR_DOUBLE_ACP_REQUEST_IDS", "string").spawn();
    a.init();
    let sid = a.new_session();
    let id = a.prompt(&sid, r#"[[double:{"createPlan":{"name":"Bump"},"askQuestion":true,"answer":"done"}]] go"#);
    let mut seen = Vec::new();
    for method in ["cursor/create_plan", "cursor/ask_question"] {
        let req = loop {
            let m = a.next(LONG).expect("a cursor request");
            if str_at(&m, &["method"]) == Some(method) {
                break m;
            }
            seen.push(m);
        };
        assert!(matches!(req.get("id"), Some(Json::Str(_))), "string ids knob");
        assert!(at(&req, &["params", "sessionId"]).is_none());
        if method == "cursor/create_plan" {
            assert_eq!(str_at(&req, &["params", "name"]), Some("Bump"));
        } else {
            assert_eq!(values(at(&req, &["params", "questions"]).unwrap(), "id"), ["q1"]);
        }
        // Blocked: nothing more arrives until the client answers.
        assert!(a.next(SHORT).is_none(), "the turn went on before {method} was answered");
        a.reply(req.get("id").unwrap(), r#"{"outcome":{"outcome":"cancelled"}}"#);
    }
    let (ms, resp) = a.until_response(id, LONG);
    assert_eq!(message_text(&ms), "done");
    assert_eq!(stop_reason(&resp), "end_turn");
    assert!(seen.iter().all(|m| kind_of(m) != "agent_message_chunk"));
    a.close();
}

#[test]
fn cancel_ends_the_turn_with_cancelled() {
    // (directive, what to wait for before cancelling)
    let cases = [
        (r#"{"answer":"a long answer that streams slowly","chunkChars":2,"deltaDelayMs":200}"#, "agent_message_chunk"),
        (r#"{"hang":"beforeOutput"}"#, ""),
        (r#"{"hang":"midStream","chunkChars":2}"#, "agent_message_chunk"),
        // An unanswered permission request must not block the cancel.
        (r#"{"permissionQuery":true,"tools":[{"args":{"command":"make"}}]}"#, "session/request_permission"),
    ];
    for (directive, wait_for) in cases {
        let mut a = setup().spawn();
        a.init();
        let sid = a.new_session();
        let id = a.prompt(&sid, &format!("[[double:{directive}]] hi"));
        if !wait_for.is_empty() {
            loop {
                let m = a.next(LONG).expect("turn messages");
                if kind_of(&m) == wait_for {
                    break;
                }
            }
        } else {
            std::thread::sleep(Duration::from_millis(100));
        }
        let cancelled_at = Instant::now();
        a.notify("session/cancel", &format!(r#"{{"sessionId":"{sid}"}}"#));
        let (_, resp) = a.until_response(id, LONG);
        assert_eq!(stop_reason(&resp), "cancelled", "{directive}");
        assert!(cancelled_at.elapsed() < Duration::from_secs(2), "{directive}");
        // The session serves the next prompt.
        let (_, resp) = a.turn(&sid, "again");
        assert_eq!(stop_reason(&resp), "end_turn");
        let f = a.close();
        let rec = f.exit_record();
        let methods = values(at(rec, &["acp", "received"]).unwrap(), "method");
        assert!(methods.contains(&"session/cancel".to_owned()));
        if wait_for == "session/request_permission" {
            let sent = at(rec, &["acp", "sentRequests"]).unwrap();
            assert!(s(sent).contains("\"answered\":false"), "{}", s(sent));
        }
    }
}

#[test]
fn set_config_option_and_set_mode_errors() {
    let mut a = setup().env("CURSOR_DOUBLE_ACP_UNROUTABLE_MODELS", "grok-5[]").spawn();
    a.init();
    let sid = a.new_session();
    // (params, code, message)
    let cases = [
        (format!(r#"{{"sessionId":"{sid}","id":"model","value":"default[]"}}"#), -32603, "Internal error"),
        (
            format!(r#"{{"sessionId":"{sid}","configId":"model","value":"composer-2.5"}}"#),
            -32602,
            "Invalid model value: composer-2.5",
        ),
        (format!(r#"{{"sessionId":"{sid}","configId":"model","value":"auto"}}"#), -32602, "Invalid model value: auto"),
        (format!(r#"{{"sessionId":"{sid}","configId":"mode","value":"yolo"}}"#), -32602, "Invalid mode value: yolo"),
        (
            format!(r#"{{"sessionId":"{sid}","configId":"effort","value":"high"}}"#),
            -32602,
            "Unknown config option: effort",
        ),
        (
            r#"{"sessionId":"nope","configId":"model","value":"default[]"}"#.to_owned(),
            -32602,
            "Session \"nope\" not found",
        ),
    ];
    for (params, code, message) in &cases {
        let e = a.error("session/set_config_option", params);
        assert_eq!(e.get("code"), Some(&Json::from(*code as i64)), "{params}");
        assert_eq!(str_at(&e, &["message"]), Some(*message), "{params}");
    }
    let e =
        a.error("session/set_config_option", &format!(r#"{{"sessionId":"{sid}","id":"model","value":"default[]"}}"#));
    assert_eq!(
        s(at(&e, &["data"]).unwrap()),
        r#"[{"expected":"string","code":"invalid_type","path":["configId"],"message":"Invalid input"}]"#
    );
    // A listed value: the full options come back with it current.
    let r = a.result(
        "session/set_config_option",
        &format!(r#"{{"sessionId":"{sid}","configId":"model","value":"composer-2.5[fast=true]"}}"#),
    );
    let options = r.get("configOptions").unwrap();
    assert_eq!(values(options, "id"), ["mode", "model"]);
    assert_eq!(str_at(config(options, "model"), &["currentValue"]), Some("composer-2.5[fast=true]"));
    // set_mode: {} then current_mode_update.
    let (_, resp) = a.call("session/set_mode", &format!(r#"{{"sessionId":"{sid}","modeId":"plan"}}"#));
    assert_eq!(s(resp.get("result").unwrap()), "{}");
    let upd = loop {
        let m = a.next(LONG).unwrap();
        if kind_of(&m) == "current_mode_update" {
            break m;
        }
    };
    assert_eq!(str_at(&upd, &["params", "update", "currentModeId"]), Some("plan"));
    let e = a.error("session/set_mode", &format!(r#"{{"sessionId":"{sid}","modeId":"yolo"}}"#));
    assert_eq!(str_at(&e, &["message"]), Some("Invalid mode value: yolo"));
    // session/set_model is not exposed by default.
    let e = a.error("session/set_model", &format!(r#"{{"sessionId":"{sid}","modelId":"default[]"}}"#));
    assert_eq!(e.get("code"), Some(&Json::from(-32601i64)));
    // Soft reject: an unroutable model is accepted, the next prompt streams the error + end_turn.
    a.result("session/set_config_option", &format!(r#"{{"sessionId":"{sid}","configId":"model","value":"grok-5[]"}}"#));
    let (ms, resp) = a.turn(&sid, "hello");
    assert!(message_text(&ms).starts_with("Error: I: AI Model Not Found"), "{}", message_text(&ms));
    assert_eq!(stop_reason(&resp), "end_turn");
    a.close();
}

#[test]
fn errors_as_text_and_as_json_rpc_errors() {
    // (directive, Ok(text) for an end_turn answer | Err((code, message)) for an error reply)
    type Expect<'a> = Result<&'a str, (i64, &'a str)>;
    let cases: [(&str, Expect); 6] = [
        (r#"{"fail":"planGated"}"#, Ok("\n\nUpgrade your plan to continue")),
        (r#"{"fail":"usageLimit"}"#, Ok("Error: You've hit your usage limit")),
        (r#"{"rpcError":{"code":-32603,"message":"Internal error","data":{"x":1}}}"#, Err((-32603, "Internal error"))),
        (r#"{"fail":"ping"}"#, Err((-32603, "ConnectError: [unavailable] PING timed out"))),
        (
            r#"{"fail":"streamClosed"}"#,
            Err((-32603, "ConnectError: [canceled] http/2 stream closed with error code CANCEL (0x8)")),
        ),
        (
            r#"{"fail":"auth"}"#,
            Err((
                -32000,
                "Authentication required. Please run 'agent login' first, or set CURSOR_API_KEY environment variable.",
            )),
        ),
    ];
    let mut a = setup().spawn();
    a.init();
    let sid = a.new_session();
    for (directive, expect) in cases {
        let (ms, resp) = a.turn(&sid, &format!("[[double:{directive}]] hi"));
        match expect {
            Ok(text) => {
                assert_eq!(message_text(&ms), text, "{directive}");
                assert_eq!(stop_reason(&resp), "end_turn");
            }
            Err((code, message)) => {
                assert_eq!(at(&resp, &["error", "code"]), Some(&Json::from(code)), "{directive}");
                assert_eq!(str_at(&resp, &["error", "message"]), Some(message));
                assert!(
                    ms.iter().all(|m| kind_of(m) == "available_commands_update"),
                    "no output before a transport failure: {directive}"
                );
            }
        }
    }
    // failTimes: the first turn fails, the retry of the same prompt works.
    let prompt = r#"[[double:{"fail":"ping","failTimes":1,"answer":"ok"}]] retry me"#;
    let (_, resp) = a.turn(&sid, prompt);
    assert!(resp.get("error").is_some());
    let (ms, resp) = a.turn(&sid, prompt);
    assert_eq!((message_text(&ms).as_str(), stop_reason(&resp)), ("ok", "end_turn"));
    // A typo in a directive is an invalid-params error naming the double.
    let (_, resp) = a.turn(&sid, r#"[[double:{"anwser":"x"}]] hi"#);
    assert!(str_at(&resp, &["error", "data", "details"]).unwrap().contains("unknown scenario field 'anwser'"));
    a.close();
}

#[test]
fn load_replays_across_processes_and_the_not_found_knobs() {
    let first = setup();
    let mut a = first.spawn();
    a.init();
    let sid = a.new_session();
    let (ms, _) = a.turn(&sid, "hi there");
    assert_eq!(message_text(&ms), "Echo: hi there");
    a.close();

    let load = format!(r#"{{"sessionId":"{sid}","cwd":"{}","mcpServers":[]}}"#, first.ws());
    // Another process, same data folder: replay before the answer.
    let mut b = first.spawn();
    b.init();
    let (before, resp) = b.call("session/load", &load);
    assert_eq!(kinds(&before), ["user_message_chunk", "agent_message_chunk"]);
    assert_eq!(str_at(&before[0], &["params", "update", "content", "text"]), Some("hi there"));
    assert_eq!(str_at(&before[1], &["params", "update", "content", "text"]), Some("Echo: hi there"));
    let r = resp.get("result").unwrap();
    let keys: Vec<&str> = r.as_object().unwrap().iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, ["modes", "models", "configOptions"]);
    let (_, resp) = b.turn(&sid, "second");
    assert_eq!(stop_reason(&resp), "end_turn");
    // session/list (advertised) knows it.
    let list = b.result("session/list", &format!(r#"{{"cwd":"{}"}}"#, first.ws()));
    assert_eq!(values(list.get("sessions").unwrap(), "sessionId"), std::slice::from_ref(&sid));
    b.close();

    // (knob, replayed chunks or error)
    let cases: [(&str, Result<usize, ()>); 4] =
        [("replay", Ok(4)), ("no-replay", Ok(0)), ("foreign-not-found", Err(())), ("not-found", Err(()))];
    for (knob, expect) in cases {
        let mut c = first.clone().env("CURSOR_DOUBLE_ACP_LOAD", knob).spawn();
        c.init();
        let (before, resp) = c.call("session/load", &load);
        match expect {
            Ok(n) => {
                assert_eq!(before.len(), n, "{knob}");
                assert!(resp.get("result").is_some(), "{knob}");
            }
            Err(()) => {
                assert_eq!(
                    s(resp.get("error").unwrap()),
                    format!(r#"{{"code":-32602,"message":"Session \"{sid}\" not found"}}"#),
                    "{knob}"
                );
            }
        }
        c.close();
    }
    // What a successful load answers: the catalogue (default), `{}` (ACP v1 makes it all
    // optional), or nothing at all; the replay comes first either way.
    for (knob, answer) in [("full", Some(true)), ("empty", Some(false)), ("none", None)] {
        let mut c = first.clone().env("CURSOR_DOUBLE_ACP_LOAD_ANSWER", knob).spawn();
        c.init();
        let id = Json::from(c.request("session/load", &load));
        let mut replayed = 0;
        let answered = loop {
            match c.next(Duration::from_millis(1500)) {
                Some(m) if m.get("method").is_none() && m.get("id") == Some(&id) => break Some(m),
                Some(m) if kind_of(&m).ends_with("_message_chunk") => replayed += 1,
                Some(_) => {}
                None => break None,
            }
        };
        assert!(replayed >= 4, "{knob}: {replayed}");
        match (answer, answered) {
            (Some(true), Some(m)) => assert!(at(&m, &["result", "configOptions"]).is_some(), "{knob}: {}", s(&m)),
            (Some(false), Some(m)) => assert_eq!(s(m.get("result").unwrap()), "{}", "{knob}"),
            (None, None) => {}
            (_, m) => panic!("{knob}: {m:?}"),
        }
        // The session is loaded even when the answer never came.
        let (_, resp) = c.turn(&sid, "after the load");
        assert_eq!(stop_reason(&resp), "end_turn", "{knob}");
        c.close();
    }
    // A session this process made loads even under foreign-not-found.
    let mut d = setup().env("CURSOR_DOUBLE_ACP_LOAD", "foreign-not-found").spawn();
    d.init();
    let own = d.new_session();
    let params = format!(r#"{{"sessionId":"{own}","cwd":"{}","mcpServers":[]}}"#, d.cwd);
    assert!(d.call("session/load", &params).1.get("result").is_some());
    // An id nobody has.
    let e = d.error(
        "session/load",
        &format!(r#"{{"sessionId":"00000000-0000-4000-8000-000000000000","cwd":"{}","mcpServers":[]}}"#, d.cwd),
    );
    assert_eq!(e.get("code"), Some(&Json::from(-32602i64)));
    d.close();
}

#[test]
fn authenticate_and_credentials_knobs() {
    // (env, authenticate: Some(Ok) {} | Some(Err(code)) | None = hangs, session/new: Ok | Err(code))
    type Case<'a> = (&'a [(&'a str, &'a str)], Option<Result<(), i64>>, Result<(), i64>);
    let cases: [Case; 8] = [
        (&[], Some(Ok(())), Ok(())),
        (&[("CURSOR_DOUBLE_LOGGED_IN", "0")], None, Err(-32000)),
        (&[("CURSOR_DOUBLE_LOGGED_IN", "0"), ("CURSOR_API_KEY", "k")], None, Ok(())),
        (
            &[("CURSOR_DOUBLE_LOGGED_IN", "0"), ("CURSOR_API_KEY", "k"), ("CURSOR_DOUBLE_ACP_AUTH_KEY_ONLY", "ok")],
            Some(Ok(())),
            Ok(()),
        ),
        (
            &[
                ("CURSOR_DOUBLE_LOGGED_IN", "0"),
                ("CURSOR_API_KEY", "k"),
                ("CURSOR_DOUBLE_ACP_AUTH_KEY_ONLY", "invalid-params"),
            ],
            Some(Err(-32602)),
            Ok(()),
        ),
        (&[("CURSOR_DOUBLE_ACP_AUTH", "error")], Some(Err(-32000)), Ok(())),
        (&[("CURSOR_DOUBLE_ACP_AUTH", "hang")], None, Ok(())),
        (&[("CURSOR_API_KEY", "wrong"), ("CURSOR_DOUBLE_VALID_KEY", "right")], Some(Ok(())), Err(-32000)),
    ];
    for (env, auth, new) in cases {
        let mut st = setup();
        for (k, v) in env {
            st = st.env(k, v);
        }
        let mut a = st.spawn();
        a.init();
        let id = a.request("authenticate", r#"{"methodId":"cursor_login"}"#);
        let got = a.next(SHORT);
        match auth {
            None => assert!(got.is_none(), "{env:?}: authenticate should hang, got {got:?}"),
            Some(expect) => {
                let r = got.unwrap_or_else(|| panic!("{env:?}: no authenticate answer"));
                assert_eq!(r.get("id"), Some(&Json::from(id)));
                match expect {
                    Ok(()) => assert_eq!(s(r.get("result").unwrap()), "{}", "{env:?}"),
                    Err(code) => assert_eq!(at(&r, &["error", "code"]), Some(&Json::from(code)), "{env:?}"),
                }
            }
        }
        let params = a.new_session_params();
        let (_, r) = a.call("session/new", &params);
        match new {
            Ok(()) => assert!(r.get("result").is_some(), "{env:?}: {}", s(&r)),
            Err(code) => assert_eq!(at(&r, &["error", "code"]), Some(&Json::from(code)), "{env:?}"),
        }
        let f = a.close();
        let received = at(f.exit_record(), &["acp", "received"]).unwrap();
        let auth_entry = match received {
            Json::Arr(items) => items.iter().find(|e| str_at(e, &["method"]) == Some("authenticate")).unwrap().clone(),
            _ => unreachable!(),
        };
        assert_eq!(auth_entry.get("answer") == Some(&Json::Null), auth.is_none(), "{env:?}");
    }
    // The unverified claim: no session before authenticate (knob).
    let mut a = setup().env("CURSOR_DOUBLE_ACP_REQUIRE_AUTH", "1").spawn();
    a.init();
    let params = a.new_session_params();
    assert_eq!(a.error("session/new", &params).get("code"), Some(&Json::from(-32000i64)));
    a.result("authenticate", r#"{"methodId":"cursor_login"}"#);
    a.result("session/new", &params);
    a.close();
}

#[test]
fn unknown_methods_bad_lines_and_list_models_knobs() {
    let mut a = setup().spawn();
    a.init();
    let e = a.error("session/frobnicate", "{}");
    assert_eq!(s(&e), r#"{"code":-32601,"message":"Method not found","data":{"method":"session/frobnicate"}}"#);
    // Not advertised: session/resume and session/close are unknown.
    assert_eq!(a.error("session/resume", "{}").get("code"), Some(&Json::from(-32601i64)));
    assert_eq!(a.error("logout", "{}").get("code"), Some(&Json::from(-32601i64)));
    // A line that is not JSON, and an unknown notification (no answer).
    a.send_line("this is not json");
    let m = a.next(LONG).unwrap();
    assert_eq!(s(&m), r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#);
    a.notify("cursor/whatever", "{}");
    let r = a.result("cursor/list_available_models", "{}");
    assert!(matches!(r.get("models"), Some(Json::Arr(m)) if m.len() == 10));
    a.close();

    for (knob, expect) in [("unsupported", Err(-32601i64)), ("empty", Ok(0usize))] {
        let mut a = setup().env("CURSOR_DOUBLE_ACP_LIST_MODELS", knob).spawn();
        a.init();
        let (_, r) = a.call("cursor/list_available_models", "{}");
        match expect {
            Ok(n) => assert!(matches!(at(&r, &["result", "models"]), Some(Json::Arr(m)) if m.len() == n)),
            Err(code) => assert_eq!(at(&r, &["error", "code"]), Some(&Json::from(code))),
        }
        a.close();
    }
}

#[test]
fn an_unanswered_agent_request_is_recorded() {
    let mut a = setup().env("CURSOR_DOUBLE_ACP_REQUEST_TIMEOUT_MS", "150").spawn();
    a.init();
    let sid = a.new_session();
    a.prompt(&sid, r#"[[double:{"askQuestion":true}]] hi"#);
    let req = loop {
        let m = a.next(LONG).unwrap();
        if str_at(&m, &["method"]) == Some("cursor/ask_question") {
            break m;
        }
    };
    assert_eq!(req.get("id"), Some(&Json::from(0u64)));
    std::thread::sleep(Duration::from_millis(400));
    let f = a.close();
    assert_eq!(f.code, Some(0));
    assert!(f.stderr.contains("has not answered request 0 (cursor/ask_question) within 150 ms"), "{}", f.stderr);
    let rec = f.exit_record();
    assert_eq!(str_at(rec, &["acp", "exitReason"]), Some("eof"));
    let sent = match at(rec, &["acp", "sentRequests"]) {
        Some(Json::Arr(items)) => items.clone(),
        _ => panic!(),
    };
    assert_eq!(sent.len(), 1);
    assert_eq!(str_at(&sent[0], &["method"]), Some("cursor/ask_question"));
    assert_eq!(sent[0].get("answered"), Some(&Json::Bool(false)));
    assert_eq!(sent[0].get("timedOut"), Some(&Json::Bool(true)));
    // The prompt itself was never answered either.
    let received = at(rec, &["acp", "received"]).unwrap();
    let prompt = match received {
        Json::Arr(items) => items.iter().find(|e| str_at(e, &["method"]) == Some("session/prompt")).unwrap().clone(),
        _ => unreachable!(),
    };
    assert_eq!(prompt.get("answer"), Some(&Json::Null));

    // Answered in time: on record with the wait.
    let mut a = setup().spawn();
    a.init();
    let sid = a.new_session();
    let id = a.prompt(&sid, r#"[[double:{"createPlan":true}]] hi"#);
    let req = loop {
        let m = a.next(LONG).unwrap();
        if str_at(&m, &["method"]) == Some("cursor/create_plan") {
            break m;
        }
    };
    a.reply(req.get("id").unwrap(), r#"{"accepted":true}"#);
    a.until_response(id, LONG);
    let f = a.close();
    let sent = at(f.exit_record(), &["acp", "sentRequests"]).unwrap();
    let e = match sent {
        Json::Arr(items) => items[0].clone(),
        _ => unreachable!(),
    };
    assert_eq!(e.get("answered"), Some(&Json::Bool(true)));
    assert_eq!(e.get("timedOut"), Some(&Json::Bool(false)));
    assert_eq!(s(e.get("reply").unwrap()), r#"{"result":{"accepted":true}}"#);
    assert!(matches!(e.get("waitedMs"), Some(Json::Num(_))));
}

#[test]
fn start_up_failures() {
    let bad_cli = temp_path("bad-cli");
    std::fs::create_dir_all(bad_cli.join(".cursor")).unwrap();
    std::fs::write(bad_cli.join(".cursor/cli.json"), r#"{"permissions":{},"model":"gpt"}"#).unwrap();
    let good_cli = temp_path("good-cli");
    std::fs::create_dir_all(good_cli.join(".cursor")).unwrap();
    std::fs::write(good_cli.join(".cursor/cli.json"), r#"{"permissions":{"allow":[]}}"#).unwrap();
    let _dirs = Cleanup(vec![bad_cli.clone(), good_cli.clone()]);
    let with_dir = setup();
    let project = PathBuf::from(&with_dir.home)
        .join(".cursor/projects")
        .join(with_dir.ws().trim_start_matches('/').replace(|c: char| !c.is_ascii_alphanumeric(), "-"));

    // (setup, Err((stderr starts with, exit reason)) | Ok = initialize answers)
    type Expect<'a> = Result<(), (&'a str, &'a str)>;
    let cases: Vec<(Setup, Expect)> = vec![
        (setup().env("CURSOR_DOUBLE_ACP_START_FAIL", "exit"), Err(("", "startup: exit"))),
        (setup().flags(&[]), Err(("", "startup: trust"))),
        (setup().flags(&["--force"]), Ok(())),
        (setup().flags(&[]).env("CURSOR_DOUBLE_ACP_TRUST", "ignore"), Ok(())),
        (
            setup().env("CURSOR_DOUBLE_ACP_START_FAIL", "cli-json"),
            Err(("Error: Invalid project configuration in ", "startup: cli.json")),
        ),
        (setup().cwd(&bad_cli), Err(("Error: Invalid project configuration in ", "startup: cli.json"))),
        (setup().cwd(&good_cli), Ok(())),
        (setup().env("CURSOR_DOUBLE_ACP_PROJECT_DIR_REQUIRED", "1"), Err(("", "startup: project dir"))),
        (with_dir.clone().env("CURSOR_DOUBLE_ACP_PROJECT_DIR_REQUIRED", "1").cwd(&with_dir.home.clone()), Ok(())),
        // A wire id is not a CLI model (hapi #1197): only print-mode ids work at launch.
        (
            setup().flags(&["--trust", "--model", "sonnet-5[thinking=true]"]),
            Err((
                "Cannot use this model: sonnet-5[thinking=true]. Available models: auto, composer-2.5,",
                "startup: model",
            )),
        ),
    ];
    std::fs::create_dir_all(&project).unwrap();
    for (st, expect) in cases {
        let mut a = st.spawn();
        match expect {
            Ok(()) => {
                assert_eq!(s(&a.init()), INITIALIZE, "{:?}", st.env);
                assert_eq!(a.close().code, Some(0));
            }
            Err((stderr, reason)) => {
                let f = a.wait_exit();
                assert_eq!(f.code, Some(1), "{reason}");
                assert!(f.rest.is_empty(), "{reason}: stdout {:?}", f.rest);
                if stderr.is_empty() {
                    assert_eq!(f.stderr, "", "{reason}");
                } else {
                    assert!(f.stderr.starts_with(stderr), "{reason}: {}", f.stderr);
                }
                assert_eq!(str_at(f.exit_record(), &["acp", "exitReason"]), Some(reason));
                if reason == "startup: cli.json" && st.cwd.is_some() {
                    assert!(f.stderr.contains("'model'"), "{}", f.stderr);
                }
            }
        }
    }
}

#[test]
fn slow_start_slow_session_new_and_a_transient_session_failure() {
    let mut a = setup()
        .env("CURSOR_DOUBLE_ACP_STARTUP_MS", "800")
        .env("CURSOR_DOUBLE_ACP_NEW_SESSION_MS", "1500")
        .env("CURSOR_DOUBLE_ACP_NEW_SESSION_FAILURES", "1")
        .spawn();
    let spawned = a.spawned;
    let id = a.request("initialize", r#"{"protocolVersion":1}"#);
    a.until_response(id, LONG);
    assert!(spawned.elapsed() >= Duration::from_millis(800));
    // -32603 right after initialize, once; the retry on the same connection works.
    let params = a.new_session_params();
    let t = Instant::now();
    let e = a.error("session/new", &params);
    assert_eq!(s(&e), r#"{"code":-32603,"message":"Failed to initialize session services"}"#);
    assert!(t.elapsed() >= Duration::from_millis(1500));
    // The dispatcher is not blocked meanwhile: another request is answered first.
    let new_id = a.request("session/new", &params);
    let models_id = a.request("cursor/list_available_models", "{}");
    let first = a.next(LONG).unwrap();
    assert_eq!(first.get("id"), Some(&Json::from(models_id)));
    let (_, r) = a.until_response(new_id, LONG);
    assert!(r.get("result").is_some());
    a.close();
}

#[test]
fn a_crash_mid_turn_exits_1_and_is_on_record() {
    let mut a = setup().env("CURSOR_API_KEY", "sekrit").spawn();
    a.init();
    let sid = a.new_session();
    a.prompt(&sid, r#"[[double:{"answer":"abcdefgh","chunkChars":2,"crashAfterDeltas":2}]] hi"#);
    let f = a.wait_exit();
    assert_eq!(f.code, Some(1));
    assert_eq!(f.stderr, "Error: Connection lost: ECONNRESET\n");
    assert_eq!(message_text(&f.rest), "abcd");
    assert!(f.rest.iter().all(|m| m.get("result").is_none() || str_at(m, &["result", "sessionId"]).is_some()));
    assert_eq!(f.records.len(), 2);
    let start = &f.records[0];
    assert_eq!(str_at(start, &["subcommand"]), Some("acp"));
    assert_eq!(str_at(start, &["acp", "phase"]), Some("start"));
    assert_eq!(str_at(start, &["env", "CURSOR_API_KEY"]), Some("sekrit"));
    assert_eq!(s(start.get("argv").unwrap()), r#"["--trust","acp"]"#);
    let exit = f.exit_record();
    assert_eq!(str_at(exit, &["acp", "exitReason"]), Some("crash"));
    assert_eq!(at(exit, &["acp", "exitCode"]), Some(&Json::from(1u64)));
    assert_eq!(
        values(at(exit, &["acp", "received"]).unwrap(), "method"),
        ["initialize", "session/new", "session/prompt"]
    );
    assert_eq!(s(at(exit, &["acp", "sessions"]).unwrap()), format!(r#"["{sid}"]"#));
}

// SIGTERM is POSIX (Windows has no signals to record).
#[cfg(unix)]
#[test]
fn eof_ends_the_process_even_mid_turn_and_sigterm_is_recorded() {
    let mut a = setup().spawn();
    a.init();
    let sid = a.new_session();
    a.prompt(&sid, r#"[[double:{"hang":"beforeOutput"}]] hi"#);
    std::thread::sleep(Duration::from_millis(100));
    let t = Instant::now();
    let f = a.close();
    assert_eq!(f.code, Some(0));
    assert!(t.elapsed() < Duration::from_secs(2));

    let mut a = setup().spawn();
    a.init();
    // SAFETY: sending a signal to our own child.
    unsafe {
        libc::kill(a.child.id() as i32, libc::SIGTERM);
    }
    let f = a.wait_exit();
    assert_eq!(f.code, None, "killed by the signal");
    assert_eq!(str_at(f.exit_record(), &["acp", "exitReason"]), Some("signal 15"));
}

#[test]
fn resume_and_close_when_advertised() {
    let st = setup().env("CURSOR_DOUBLE_ACP_SESSION_CAPS", "list,resume,close");
    let mut a = st.spawn();
    a.init();
    let sid = a.new_session();
    a.turn(&sid, "hi");
    a.close();
    let mut b = st.spawn();
    b.init();
    let params = format!(r#"{{"sessionId":"{sid}","cwd":"{}","mcpServers":[]}}"#, st.ws());
    let (before, resp) = b.call("session/resume", &params);
    assert!(before.iter().all(|m| kind_of(m) == "available_commands_update"), "no replay");
    assert!(resp.get("result").is_some());
    assert_eq!(s(&b.result("session/close", &format!(r#"{{"sessionId":"{sid}"}}"#))), "{}");
    let (_, resp) = b.turn(&sid, "after close");
    assert_eq!(str_at(&resp, &["error", "message"]), Some(format!("Session \"{sid}\" not found").as_str()));
    b.close();
}

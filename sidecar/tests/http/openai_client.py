"""`cursor-bridge serve` driven by the official `openai` Python package, as a real client would.

Run by sidecar/tests/process/http_openai.rs, which starts two servers against the CLI test double and
passes, in the environment:
  OPEN_URL      base URL (…/v1) of a server without a client key
  OPEN_RECORD   the CLI double's record file of that server (one JSON line per CLI run)
  OPEN_ACP_SESSIONS  on ACP: the double's session store of that server (one folder per session,
                each with its turns: cli-double README §8.6)
  KEYED_URL     base URL of a server that requires KEY
  KEY           that server's client key
  BACKEND       `print` (default) or `acp`: which records tell what reached the CLI
Each check prints `ok` or `FAIL`; the last line is `N passed, N failed`.
"""

import json
import os
import sys
import time

import openai
from double_record import (
    BACKEND,
    THINKING,
    UNICODE,
    alive,
    chat_turns,
    continues,
    directed,
    expect,
    http,
    resume_id,
    run_checks,
    run_with,
    turn_mode,
    unique,
)

OPEN_URL = os.environ["OPEN_URL"]
KEYED_URL = os.environ["KEYED_URL"]
KEY = os.environ["KEY"]

# No retries: an error must show up as the first answer, not after the client's back-off.
client = openai.OpenAI(base_url=OPEN_URL, api_key="unused", max_retries=0, timeout=60)

# How the backends differ for these checks, stated once (as the Rust process suite's `Expected`
# tables do) instead of in branches through the checks.
EXPECTED = {
    "print": {
        # Stop kills the turn's CLI process: the cancelled turn needs no conversation before it.
        "warm_agent_survives_stop": False,
        # The prompt protocol: a tool's result is a prompt of the resumed chat, and a required or
        # named tool choice is said in the prompt the CLI reads.
        "results_resume_the_chat_by_flag": True,
        "tool_choice_said_in_the_prompt": True,
    },
    "acp": {
        # One agent per conversation stays warm; Stop ends the turn, not the agent. A new session
        # whose very first turn is stopped is one nobody can continue (its id never reached the
        # engine), so its agent is retired instead: the check stops a conversation's second turn.
        "warm_agent_survives_stop": True,
        # The tools are the agent's own (MCP): a result goes into the call still waiting, and the
        # tool choice is said before the prompt, in a record this client does not read
        # (http_tool_choice.rs checks it on both backends).
        "results_resume_the_chat_by_flag": False,
        "tool_choice_said_in_the_prompt": False,
    },
}["acp" if BACKEND == "acp" else "print"]  # `auto` reads as print mode, as the Rust tables do


def root(url):
    return url.removesuffix("/v1")


# ---------------------------------------------------------------------------------------------


def check_models_list():
    models = client.models.list()
    ids = [m.id for m in models.data]
    assert "auto" in ids and "opus-5" in ids, ids
    for m in models.data:
        assert m.object == "model" and m.owned_by == "cursor", m
        assert isinstance(m.model_extra["context_window"], int) and m.model_extra["context_window"] > 0, m


def check_non_streaming():
    r = client.chat.completions.create(
        model="auto",
        messages=[{"role": "user", "content": directed(unique("non-streaming"), answer=UNICODE)}],
    )
    assert r.object == "chat.completion", r
    assert r.choices[0].message.role == "assistant"
    assert r.choices[0].message.content == UNICODE, repr(r.choices[0].message.content)
    assert r.choices[0].finish_reason == "stop", r.choices[0].finish_reason
    u = r.usage
    assert u.prompt_tokens > 0 and u.completion_tokens > 0, u
    assert u.total_tokens == u.prompt_tokens + u.completion_tokens, u


def check_streaming():
    stream = client.chat.completions.create(
        model="auto",
        stream=True,
        stream_options={"include_usage": True},
        messages=[{"role": "user", "content": directed(unique("streaming"), answer=UNICODE, chunkChars=3)}],
    )
    chunks = list(stream)
    assert chunks[0].choices[0].delta.role == "assistant", chunks[0]
    assert all(c.object == "chat.completion.chunk" for c in chunks)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == UNICODE, repr(text)
    content_chunks = [c for c in chunks if c.choices and c.choices[0].delta.content]
    assert len(content_chunks) > 3, f"streamed in pieces, got {len(content_chunks)}"
    finals = [c for c in chunks if c.choices and c.choices[0].finish_reason]
    assert [c.choices[0].finish_reason for c in finals] == ["stop"], finals
    usage = chunks[-1]
    assert usage.choices == [] and usage.usage is not None and usage.usage.total_tokens > 0, usage


def check_streaming_without_usage():
    stream = client.chat.completions.create(
        model="auto",
        stream=True,
        messages=[{"role": "user", "content": directed(unique("no usage"), answer="short")}],
    )
    chunks = list(stream)
    assert all(c.usage is None for c in chunks), chunks[-1]
    assert chunks[-1].choices[0].finish_reason == "stop", chunks[-1]


def check_reasoning():
    content = directed(unique("reasoning"), answer="42", thinking=THINKING, chunkChars=4)
    stream = client.chat.completions.create(model="auto", stream=True, messages=[{"role": "user", "content": content}])
    reasoning, text = "", ""
    for c in stream:
        if not c.choices:
            continue
        delta = c.choices[0].delta
        reasoning += (delta.model_extra or {}).get("reasoning_content") or getattr(delta, "reasoning_content", None) or ""
        text += delta.content or ""
    assert reasoning == THINKING, repr(reasoning)
    assert text == "42", repr(text)
    # And in one piece.
    content = directed(unique("reasoning, not streamed"), answer="42", thinking=THINKING)
    r = client.chat.completions.create(model="auto", messages=[{"role": "user", "content": content}])
    assert r.choices[0].message.model_extra["reasoning_content"] == THINKING, r.choices[0].message
    assert r.choices[0].message.content == "42"


def check_history_resumes():
    first = unique("Remember the number 7.")
    messages = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": first},
    ]
    r1 = client.chat.completions.create(model="auto", messages=messages)
    run1 = run_with(first, latest=True)
    second = unique("Which number was it?")
    messages += [
        {"role": "assistant", "content": r1.choices[0].message.content},
        {"role": "user", "content": [{"type": "text", "text": second}]},
    ]
    r2 = client.chat.completions.create(model="auto", messages=messages)
    assert r2.choices[0].message.content == f"Echo: {second}", r2.choices[0].message.content
    run2 = run_with(second, latest=True)
    # The second request continues the first one's chat (whichever id the first run had: a
    # prefetched one it resumed, or the one the CLI created and reported).
    assert continues(run2, run1), (run1, run2)
    assert run2["stdin"] == second, f"only the new message goes to the CLI, got {run2['stdin']!r}"
    assert run1["cwd"] == run2["cwd"], "one conversation, one workspace"
    # Another conversation works in a folder of its own.
    other = unique("another conversation")
    client.chat.completions.create(model="auto", messages=[{"role": "user", "content": other}])
    assert run_with(other, latest=True)["cwd"] != run1["cwd"]


def check_disconnect_stops_the_turn():
    marker = unique("slow")
    answer = "".join(chr(ord("a") + i % 26) for i in range(60))
    content = directed(marker, answer=answer, chunkChars=1, deltaDelayMs=150)
    messages = [{"role": "user", "content": content}]
    if EXPECTED["warm_agent_survives_stop"]:
        # A conversation that has an answer already (EXPECTED says why).
        first = unique("before the slow one")
        r1 = client.chat.completions.create(model="auto", messages=[{"role": "user", "content": first}])
        messages = [{"role": "user", "content": first}, {"role": "assistant", "content": r1.choices[0].message.content}] + messages
    stream = client.chat.completions.create(model="auto", stream=True, messages=messages)
    got = ""
    for c in stream:
        if c.choices and c.choices[0].delta.content:
            got += c.choices[0].delta.content
            if len(got) >= 2:
                break
    if EXPECTED["warm_agent_survives_stop"]:
        # The turn must end as cancelled (the double stores it then, with what it streamed)
        # within 2 s, and its agent stay.
        stream.close()
        closed = time.time()
        turn = run_with(marker, latest=True)
        ended = turn["atMs"] / 1000 - closed  # the double's clock: when the turn really ended
        assert turn["stopReason"] == "cancelled", turn
        assert ended < 2, f"the turn ended {ended:.2f} s after the client hung up"
        assert len(turn["agent"]) < len(answer), f"the whole answer streamed: {turn['agent']!r}"
        assert alive(turn["pid"]), f"agent {turn['pid']} did not survive the cancel"
        print(f"    turn cancelled {ended:.2f} s after the client closed the stream; agent {turn['pid']} warm")
        return
    pid = run_with(marker, latest=True)["pid"]
    assert alive(pid), "the CLI runs while the client reads"
    stream.close()
    closed = time.time()
    while alive(pid) and time.time() - closed < 2:
        time.sleep(0.02)
    assert not alive(pid), f"CLI {pid} still running 2 s after the client hung up"
    print(f"    CLI {pid} gone {time.time() - closed:.2f} s after the client closed the stream")


def check_unknown_model():
    e = expect(
        openai.NotFoundError,
        lambda: client.chat.completions.create(model="no-such-model", messages=[{"role": "user", "content": "hi"}]),
    )
    assert e.status_code == 404 and e.code == "model_not_found", (e.status_code, e.code)
    assert "no-such-model" in e.message, e.message
    # Streaming requests fail the same way, before any chunk.
    e = expect(
        openai.NotFoundError,
        lambda: client.chat.completions.create(
            model="no-such-model", stream=True, messages=[{"role": "user", "content": "hi"}]
        ),
    )


def check_engine_errors_keep_their_status():
    e = expect(
        openai.RateLimitError,
        lambda: client.chat.completions.create(
            model="auto", stream=True, messages=[{"role": "user", "content": directed(unique("rl"), fail="rateLimit")}]
        ),
    )
    assert e.status_code == 429, e.status_code
    e = expect(
        openai.InternalServerError,
        lambda: client.chat.completions.create(
            model="auto", messages=[{"role": "user", "content": directed(unique("auth"), fail="auth")}]
        ),
    )
    assert e.status_code == 502 and "not logged in" in e.message, (e.status_code, e.message)


def check_failure_mid_stream():
    content = directed(unique("crash"), answer="one two three four five", chunkChars=3, crashAfterDeltas=2)
    stream = client.chat.completions.create(model="auto", stream=True, messages=[{"role": "user", "content": content}])
    got = ""
    try:
        for c in stream:
            if c.choices:
                got += c.choices[0].delta.content or ""
    except openai.APIError as e:
        assert got == "one tw", f"two deltas of three characters, then the error: {got!r}"
        assert "Cursor" in e.message, e.message
    else:
        raise AssertionError("the stream ended without an error")


def check_mode():
    # The server's --mode (ask here) is a ceiling: a request may ask for less, never more.
    marker = unique("plan this")
    e = expect(
        openai.PermissionDeniedError,
        lambda: client.chat.completions.create(model="auto", messages=[{"role": "user", "content": marker}], extra_body={"mode": "plan"}),
    )
    assert e.status_code == 403 and e.code == "mode_not_allowed" and "at most `ask`" in e.message, (e.status_code, e.code, e.message)
    assert all(marker not in (r["prompt"] or "") for r in chat_turns()), "a refused request never reaches the CLI"
    marker = unique("explicit ask")
    client.chat.completions.create(model="auto", messages=[{"role": "user", "content": marker}], extra_body={"mode": "ask"})
    assert turn_mode(run_with(marker, latest=True)) == "ask", run_with(marker, latest=True)
    marker = unique("default mode")
    client.chat.completions.create(model="auto", messages=[{"role": "user", "content": marker}], user="someone")
    assert turn_mode(run_with(marker, latest=True)) == "ask", run_with(marker, latest=True)


TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}
CLOCK = {
    "type": "function",
    "function": {"name": "get_time", "description": "The time in a city", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}},
}


def weather_call(city):
    return {"name": "get_weather", "arguments": {"city": city}}


def scripted(label, *steps):
    """A user message whose model (the CLI double) plays `steps` (cli-double README, tool script)."""
    return {"role": "user", "content": directed(unique(label), toolScript=list(steps))}


def assistant_turn(message):
    """The assistant message as a client sends it back: its text and its tool calls."""
    calls = [
        {"id": c.id, "type": "function", "function": {"name": c.function.name, "arguments": c.function.arguments}}
        for c in message.tool_calls or []
    ]
    return {"role": "assistant", "content": message.content, "tool_calls": calls}


def check_function_calling_round_trip():
    first = scripted("weather", {"say": "Let me look.", "call": [weather_call("Paris")]})
    r = client.chat.completions.create(model="auto", messages=[first], tools=[TOOL])
    choice = r.choices[0]
    assert choice.finish_reason == "tool_calls", choice
    calls = choice.message.tool_calls
    assert len(calls) == 1 and calls[0].type == "function", calls
    assert calls[0].function.name == "get_weather", calls[0]
    assert json.loads(calls[0].function.arguments) == {"city": "Paris"}, calls[0].function.arguments
    assert calls[0].id.startswith("call_"), calls[0].id
    assert "TOOL_CALLS" not in (choice.message.content or ""), choice.message.content
    assert (choice.message.content or "").startswith("Let me look."), choice.message.content
    # The client ran the tool; its result continues the same chat.
    messages = [first, assistant_turn(choice.message), {"role": "tool", "tool_call_id": calls[0].id, "content": "sunny, 21 C"}]
    r = client.chat.completions.create(model="auto", messages=messages, tools=[TOOL])
    assert r.choices[0].finish_reason == "stop", r.choices[0]
    assert not r.choices[0].message.tool_calls
    assert "sunny, 21 C" in r.choices[0].message.content, r.choices[0].message.content
    if EXPECTED["results_resume_the_chat_by_flag"]:
        run = run_with("sunny, 21 C", latest=True)
        assert resume_id(run), "the result went to the chat that made the call, resumed"
        assert run["prompt"].startswith(f"TOOL_RESULT (call_id={calls[0].id}, name=get_weather):"), run["prompt"]


def check_parallel_calls_streamed():
    first = scripted("two cities", {"call": [weather_call("Paris"), weather_call("Rome")]})
    stream = client.chat.completions.create(model="auto", messages=[first], tools=[TOOL], stream=True)
    calls, finish, text = {}, None, ""
    for chunk in stream:
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        text += delta.content or ""
        for c in delta.tool_calls or []:
            entry = calls.setdefault(c.index, {"id": None, "name": None, "arguments": ""})
            entry["id"] = c.id or entry["id"]
            entry["name"] = (c.function.name if c.function else None) or entry["name"]
            entry["arguments"] += (c.function.arguments if c.function else None) or ""
        finish = chunk.choices[0].finish_reason or finish
    assert finish == "tool_calls", finish
    assert sorted(calls) == [0, 1], calls
    cities = [json.loads(calls[i]["arguments"])["city"] for i in (0, 1)]
    # Parallel calls may arrive in any order (over MCP they are separate requests).
    assert sorted(cities) == ["Paris", "Rome"], cities
    assert "TOOL_CALLS" not in text, text
    results = [{"role": "tool", "tool_call_id": calls[i]["id"], "content": f"weather {i}"} for i in (0, 1)]
    reply = {
        "role": "assistant",
        "content": text or None,
        "tool_calls": [
            {"id": calls[i]["id"], "type": "function", "function": {"name": "get_weather", "arguments": calls[i]["arguments"]}}
            for i in (0, 1)
        ],
    }
    r = client.chat.completions.create(model="auto", messages=[first, reply, *results], tools=[TOOL])
    content = r.choices[0].message.content
    assert "weather 0" in content and "weather 1" in content, content


def check_tool_choice():
    # `none`: the tools are not offered; the model answers in text.
    r = client.chat.completions.create(
        model="auto",
        messages=[{"role": "user", "content": directed(unique("tools off"), answer="sunny")}],
        tools=[TOOL],
        tool_choice="none",
    )
    assert r.choices[0].finish_reason == "stop" and r.choices[0].message.content == "sunny", r.choices[0]
    # `required` and a named function are said to the model on print mode, in the prompt the
    # record shows. (On ACP the session's MCP server lists only what may be called: the engine's
    # `a_hosted_session_lists_only_what_the_tool_choice_allows`; the double's record of what it
    # listed is written when its process exits, after this script.)
    marker = unique("required")
    r = client.chat.completions.create(
        model="auto",
        messages=[scripted(marker, {"call": [weather_call("Oslo")]})],
        tools=[TOOL, CLOCK],
        tool_choice="required",
    )
    assert r.choices[0].message.tool_calls[0].function.name == "get_weather", r.choices[0]
    if EXPECTED["tool_choice_said_in_the_prompt"]:
        assert "You must call a tool" in run_with(marker, latest=True)["prompt"], run_with(marker, latest=True)["prompt"]
    marker = unique("named")
    r = client.chat.completions.create(
        model="auto",
        messages=[scripted(marker, {"call": [weather_call("Oslo")]})],
        tools=[TOOL, CLOCK],
        tool_choice={"type": "function", "function": {"name": "get_weather"}},
    )
    if EXPECTED["tool_choice_said_in_the_prompt"]:
        prompt = run_with(marker, latest=True)["prompt"]
        assert "You must call `get_weather`" in prompt and "get_time" not in prompt, prompt
    assert r.choices[0].message.tool_calls[0].function.name == "get_weather"
    # One call per reply when the client asks for that.
    r = client.chat.completions.create(
        model="auto",
        messages=[scripted("one at a time", {"call": [weather_call("Paris"), weather_call("Rome")]})],
        tools=[TOOL],
        parallel_tool_calls=False,
    )
    assert len(r.choices[0].message.tool_calls) == 1, r.choices[0].message.tool_calls
    # A named function that is not declared is the client's mistake.
    e = expect(
        openai.BadRequestError,
        lambda: client.chat.completions.create(
            model="auto",
            messages=[{"role": "user", "content": "x"}],
            tools=[TOOL],
            tool_choice={"type": "function", "function": {"name": "nope"}},
        ),
    )
    assert "not in `tools`" in e.message, e.message


def check_bad_requests():
    e = expect(
        openai.BadRequestError,
        lambda: client.chat.completions.create(
            model="auto",
            messages=[{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}]}],
        ),
    )
    # Nothing is fetched (inline images: tests/process/http_images.rs).
    assert "data URL" in e.message, e.message
    e = expect(openai.BadRequestError, lambda: client.chat.completions.create(model="auto", messages=[]))
    status, _, body = http("POST", f"{OPEN_URL}/chat/completions", b"{not json", {"content-type": "application/json"})
    assert status == 400 and "parse" in json.loads(body)["error"]["message"], body
    big = b'{"model":"auto","messages":[{"role":"user","content":"' + b"x" * (33 * 1024 * 1024) + b'"}]}'
    status, _, body = http("POST", f"{OPEN_URL}/chat/completions", big, {"content-type": "application/json"})
    assert status == 413 and json.loads(body)["error"]["message"], (status, body[:200])


def check_health():
    status, _, body = http("GET", root(OPEN_URL) + "/health")
    assert status == 200, body
    body = json.loads(body)
    assert body["cli"]["found"] is True and body["cli"]["path"], body
    assert body["version"] and "logged_in" in body["cli"] and "in_flight" in body and "sessions" in body, body
    assert body["sessions"] >= 1, body


def check_auth():
    wrong = openai.OpenAI(base_url=KEYED_URL, api_key=KEY + "x", max_retries=0)
    right = openai.OpenAI(base_url=KEYED_URL, api_key=KEY, max_retries=0)
    # `Omit` makes the client send no Authorization header at all.
    no_key = {"Authorization": openai.Omit()}
    msgs = [{"role": "user", "content": directed(unique("authorized"), answer="welcome")}]
    for headers in (no_key, None):
        e = expect(openai.AuthenticationError, lambda: wrong.models.list(extra_headers=headers))
        assert e.code == "invalid_api_key", e.code
        expect(
            openai.AuthenticationError,
            lambda: wrong.chat.completions.create(model="auto", messages=msgs, extra_headers=headers),
        )
    health = root(KEYED_URL) + "/health"
    assert http("GET", health)[0] == 401, "/health needs the key too"
    assert http("GET", health, headers={"authorization": f"Bearer {KEY}"})[0] == 200
    assert "auto" in [m.id for m in right.models.list().data]
    r = right.chat.completions.create(model="auto", messages=msgs)
    assert r.choices[0].message.content == "welcome", r.choices[0].message.content


CHECKS = [
    check_models_list,
    check_non_streaming,
    check_streaming,
    check_streaming_without_usage,
    check_reasoning,
    check_history_resumes,
    check_disconnect_stops_the_turn,
    check_unknown_model,
    check_engine_errors_keep_their_status,
    check_failure_mid_stream,
    check_mode,
    check_function_calling_round_trip,
    check_parallel_calls_streamed,
    check_tool_choice,
    check_bad_requests,
    check_health,
    check_auth,
]


if __name__ == "__main__":
    sys.exit(run_checks(f"openai {openai.__version__}", CHECKS))

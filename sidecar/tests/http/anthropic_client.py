"""`POST /v1/messages` driven by the official `anthropic` Python package, as an Anthropic client
(Claude Code, the Agent SDK) would use it.

Run by sidecar/tests/process/http_messages.rs against `cursor-bridge serve --model opus-5` with a
client key and the CLI test double, with in the environment:
  BASE_URL      the server's root URL (no /v1: the SDK adds it, as Claude Code does)
  KEY           the server's client key
  OPEN_RECORD   the CLI double's record file (print mode)
  OPEN_ACP_SESSIONS  on ACP: the double's session store
  BACKEND       `print` (default) or `acp`
Each check prints `ok` or `FAIL`; the last line is `N passed, N failed`.
"""

import os
import sys

import anthropic
from double_record import THINKING, UNICODE, continues, directed, expect, model_of, run_checks, run_with, unique

BASE_URL = os.environ["BASE_URL"]
KEY = os.environ["KEY"]
# What Claude Code asks for: its own model id, which the server maps to its --model.
MODEL = "claude-opus-5-5"

client = anthropic.Anthropic(base_url=BASE_URL, api_key=KEY, max_retries=0, timeout=60)
# Claude Code's other way: ANTHROPIC_AUTH_TOKEN, sent as a bearer token.
bearer_client = anthropic.Anthropic(base_url=BASE_URL, auth_token=KEY, api_key=None, max_retries=0, timeout=60)

WRITE = {
    "name": "Write",
    "description": "Write a file to the local filesystem.",
    "input_schema": {
        "type": "object",
        "properties": {"file_path": {"type": "string"}, "content": {"type": "string"}},
        "required": ["file_path", "content"],
    },
}


def check_basic():
    marker = unique("basic")
    m = client.messages.create(
        model=MODEL, max_tokens=1024, system=[{"type": "text", "text": "Be terse."}],
        messages=[{"role": "user", "content": directed(marker, answer=UNICODE)}],
    )
    assert m.type == "message" and m.role == "assistant", m
    assert m.model == MODEL, m.model
    assert [b.type for b in m.content] == ["text"] and m.content[0].text == UNICODE, m.content
    assert m.stop_reason == "end_turn", m.stop_reason
    assert m.usage.input_tokens > 0 and m.usage.output_tokens > 0, m.usage
    assert model_of(run_with(marker)) == "opus-5", "a Claude id runs the server's --model"
    # Bearer auth works the same.
    r = bearer_client.messages.create(model=MODEL, max_tokens=10, messages=[{"role": "user", "content": unique("bearer")}])
    assert r.content[0].text.startswith("Echo: bearer"), r.content


def check_streaming_event_sequence():
    content = directed(unique("streaming"), answer=UNICODE, thinking=THINKING, chunkChars=3)
    with client.messages.stream(model=MODEL, max_tokens=1024, messages=[{"role": "user", "content": content}]) as s:
        events = list(s)
        final = s.get_final_message()
    kinds = [e.type for e in events]
    assert kinds[0] == "message_start", kinds
    raw = [k for k in kinds if k in ("message_start", "content_block_start", "content_block_stop", "message_delta", "message_stop")]
    assert raw == ["message_start", "content_block_start", "content_block_stop", "content_block_start", "content_block_stop", "message_delta", "message_stop"], raw
    deltas = [e.delta for e in events if e.type == "content_block_delta"]
    text = "".join(d.text for d in deltas if d.type == "text_delta")
    thinking = "".join(d.thinking for d in deltas if d.type == "thinking_delta")
    assert text == UNICODE and thinking == THINKING, (text, thinking)
    assert any(d.type == "signature_delta" for d in deltas), "a thinking block ends with its signature"
    assert len([d for d in deltas if d.type == "text_delta"]) > 3, "text in pieces"
    assert [b.type for b in final.content] == ["thinking", "text"], final.content
    assert final.stop_reason == "end_turn" and final.usage.output_tokens > 0, final


def check_history_resumes_the_chat():
    first = unique("Remember the number 7.")
    m1 = client.messages.create(model=MODEL, max_tokens=100, messages=[{"role": "user", "content": first}])
    run1 = run_with(first)
    second = unique("Which number was it?")
    history = [
        {"role": "user", "content": first},
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in m1.content]},
        {"role": "user", "content": [{"type": "text", "text": second}]},
    ]
    m2 = client.messages.create(model=MODEL, max_tokens=100, messages=history)
    assert m2.content[0].text == f"Echo: {second}", m2.content
    run2 = run_with(second)
    assert continues(run2, run1), (run1, run2)
    assert run2["stdin"] == second, f"only the new message goes to the CLI, got {run2['stdin']!r}"


def check_tool_use_round_trip_streamed():
    marker = unique("write a file")
    step = {"say": "Writing it.", "call": [{"name": "Write", "arguments": {"file_path": "/tmp/a.txt", "content": "hi ✓"}}]}
    first = {"role": "user", "content": directed(marker, toolScript=[step])}
    with client.messages.stream(model=MODEL, max_tokens=1024, messages=[first], tools=[WRITE]) as s:
        events = list(s)
        m = s.get_final_message()
    assert m.stop_reason == "tool_use", m.stop_reason
    uses = [b for b in m.content if b.type == "tool_use"]
    assert len(uses) == 1 and uses[0].name == "Write", m.content
    assert uses[0].input == {"file_path": "/tmp/a.txt", "content": "hi ✓"}, uses[0].input
    assert any(e.type == "content_block_delta" and e.delta.type == "input_json_delta" for e in events)
    text = "".join(b.text for b in m.content if b.type == "text")
    assert text.startswith("Writing it.") and "TOOL_CALLS" not in text, text
    history = [
        first,
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in m.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": uses[0].id, "content": "File created successfully"}]},
    ]
    m2 = client.messages.create(model=MODEL, max_tokens=1024, messages=history, tools=[WRITE])
    assert m2.stop_reason == "end_turn", m2.stop_reason
    assert "File created successfully" in m2.content[-1].text, m2.content


def check_tool_choice_any_and_no_parallel():
    marker = unique("forced")
    step = {"call": [{"name": "Write", "arguments": {"file_path": "/tmp/b.txt", "content": "x"}}]}
    m = client.messages.create(
        model=MODEL, max_tokens=1024, messages=[{"role": "user", "content": directed(marker, toolScript=[step])}],
        tools=[WRITE], tool_choice={"type": "any", "disable_parallel_tool_use": True},
    )
    assert m.stop_reason == "tool_use" and m.content[-1].type == "tool_use", m.content


def check_count_tokens():
    r = client.messages.count_tokens(model=MODEL, messages=[{"role": "user", "content": "Hello there, how are you today?"}], tools=[WRITE])
    assert r.input_tokens > 5, r


def check_errors():
    e = expect(anthropic.NotFoundError, lambda: client.messages.create(model="no-such-model", max_tokens=5, messages=[{"role": "user", "content": "hi"}]))
    assert e.body["type"] == "error" and e.body["error"]["type"] == "not_found_error", e.body
    # An image by URL: nothing is fetched (inline images: tests/process/http_images.rs).
    image = {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.png"}}
    e = expect(anthropic.BadRequestError, lambda: client.messages.create(model=MODEL, max_tokens=5, messages=[{"role": "user", "content": [image, {"type": "text", "text": "what is it?"}]}]))
    assert e.body["error"]["type"] == "invalid_request_error" and "data URL" in e.body["error"]["message"], e.body
    bad = anthropic.Anthropic(base_url=BASE_URL, api_key="wrong", max_retries=0)
    e = expect(anthropic.AuthenticationError, lambda: bad.messages.create(model=MODEL, max_tokens=5, messages=[{"role": "user", "content": "hi"}]))
    assert e.body["error"]["type"] == "authentication_error", e.body
    e = expect(anthropic.RateLimitError, lambda: client.messages.create(model=MODEL, max_tokens=5, messages=[{"role": "user", "content": directed(unique("rl"), fail="rateLimit")}]))
    # A failure after the stream started is an `error` event, which the SDK raises.
    content = directed(unique("crash"), answer="one two three four five", chunkChars=3, crashAfterDeltas=2)
    got = ""
    try:
        with client.messages.stream(model=MODEL, max_tokens=100, messages=[{"role": "user", "content": content}]) as s:
            for text in s.text_stream:
                got += text
    except anthropic.APIStatusError as e:
        assert got == "one tw", got
        assert "Cursor" in str(e), str(e)
    except anthropic.APIError as e:  # the SDK raises a plain APIError for an in-stream error event
        assert got == "one tw", got
        assert "Cursor" in str(e), str(e)
    else:
        raise AssertionError("the stream ended without an error")


CHECKS = [
    check_basic,
    check_streaming_event_sequence,
    check_history_resumes_the_chat,
    check_tool_use_round_trip_streamed,
    check_tool_choice_any_and_no_parallel,
    check_count_tokens,
    check_errors,
]


if __name__ == "__main__":
    sys.exit(run_checks(f"anthropic {anthropic.__version__}", CHECKS))

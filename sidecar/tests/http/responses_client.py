"""`POST /v1/responses` driven by the official `openai` Python package (`client.responses`), as a
Responses client (Codex CLI, the Agents SDK) would use it.

Run by sidecar/tests/process/http_responses.rs against `cursor-bridge serve` with the CLI test
double, with in the environment:
  OPEN_URL      base URL (…/v1) of the server
  OPEN_RECORD   the CLI double's record file (print mode: one JSON line per CLI run)
  OPEN_ACP_SESSIONS  on ACP: the double's session store
  BACKEND       `print` (default) or `acp`
Each check prints `ok` or `FAIL`; the last line is `N passed, N failed`.
"""

import json
import os
import sys

import openai
from double_record import THINKING, UNICODE, continues, directed, expect, run_checks, run_with, unique

OPEN_URL = os.environ["OPEN_URL"]

client = openai.OpenAI(base_url=OPEN_URL, api_key="unused", max_retries=0, timeout=60)

PATCH = "*** Begin Patch\n*** Add File: hello.txt\n+hi ✓\n*** End Patch\n"
WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
APPLY_PATCH = {
    "type": "custom",
    "name": "apply_patch",
    "description": "Edit files with a patch.",
    "format": {"type": "grammar", "syntax": "lark", "definition": 'start: "*** Begin Patch" /(.|\\n)*/ "*** End Patch"'},
}


def check_basic():
    r = client.responses.create(model="auto", input=directed(unique("basic"), answer=UNICODE), instructions="Be terse.")
    assert r.object == "response" and r.status == "completed", r
    assert r.id.startswith("resp_"), r.id
    assert r.output_text == UNICODE, repr(r.output_text)
    assert [o.type for o in r.output] == ["message"], r.output
    assert r.output[0].role == "assistant" and r.output[0].status == "completed", r.output[0]
    assert r.instructions == "Be terse.", r.instructions
    u = r.usage
    assert u is not None and u.input_tokens > 0 and u.output_tokens > 0, u
    assert u.total_tokens == u.input_tokens + u.output_tokens, u
    # The fields the Open Responses schema requires are there, with the values in effect.
    raw = client.responses.with_raw_response.create(model="auto", input=unique("schema")).http_response.json()
    assert isinstance(raw["completed_at"], int) and raw["completed_at"] >= raw["created_at"], raw
    for field in ("temperature", "top_p", "presence_penalty", "frequency_penalty"):
        assert isinstance(raw[field], (int, float)), (field, raw)
    assert raw["background"] is False and "max_tool_calls" in raw and "service_tier" in raw, raw


def check_streaming_event_sequence():
    stream = client.responses.create(
        model="auto", stream=True, input=directed(unique("streaming"), answer=UNICODE, thinking=THINKING, chunkChars=3)
    )
    events = list(stream)
    kinds = [e.type for e in events]
    assert kinds[:2] == ["response.created", "response.in_progress"], kinds
    assert kinds[-1] == "response.completed", kinds
    assert [e.sequence_number for e in events] == list(range(len(events))), "sequence numbers count from 0"
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert text == UNICODE, repr(text)
    assert len([k for k in kinds if k == "response.output_text.delta"]) > 3, "text in pieces"
    reasoning = "".join(e.delta for e in events if e.type == "response.reasoning_summary_text.delta")
    assert reasoning == THINKING, repr(reasoning)
    added = [e.item.type for e in events if e.type == "response.output_item.added"]
    done = [e.item.type for e in events if e.type == "response.output_item.done"]
    assert added == done == ["reasoning", "message"], (added, done)
    final = events[-1].response
    assert final.status == "completed" and final.output_text == UNICODE, final
    assert final.output[0].summary[0].text == THINKING, final.output[0]
    # The SDK's own accumulator agrees.
    with client.responses.stream(model="auto", input=directed(unique("helper"), answer="42")) as s:
        assert s.get_final_response().output_text == "42"


def check_previous_response_id_continues_the_chat():
    first = unique("Remember the number 7.")
    r1 = client.responses.create(model="auto", input=first, instructions="You are terse.")
    run1 = run_with(first)
    second = unique("Which number was it?")
    r2 = client.responses.create(model="auto", input=second, previous_response_id=r1.id)
    assert r2.output_text == f"Echo: {second}", r2.output_text
    assert r2.previous_response_id == r1.id, r2.previous_response_id
    run2 = run_with(second)
    assert continues(run2, run1), (run1, run2)
    assert run2["stdin"] == second, f"only the new message goes to the CLI, got {run2['stdin']!r}"
    e = expect(openai.BadRequestError, lambda: client.responses.create(model="auto", input="x", previous_response_id="resp_nope"))
    assert e.code == "previous_response_not_found" and e.param == "previous_response_id", (e.code, e.param)


def check_without_store_the_history_continues_the_chat():
    first = unique("A stateless client.")
    r1 = client.responses.create(model="auto", input=[{"role": "user", "content": first}], store=False)
    run1 = run_with(first)
    second = unique("And again.")
    # Codex's way: every item, each time, the output included.
    items = [{"role": "user", "content": [{"type": "input_text", "text": first}]}]
    items += [o.model_dump(exclude_none=True) for o in r1.output]
    items += [{"role": "user", "content": [{"type": "input_text", "text": second}]}]
    r2 = client.responses.create(model="auto", input=items, store=False)
    assert r2.output_text == f"Echo: {second}", r2.output_text
    run2 = run_with(second)
    assert continues(run2, run1), (run1, run2)
    e = expect(openai.BadRequestError, lambda: client.responses.create(model="auto", input="x", previous_response_id=r1.id))
    assert e.code == "previous_response_not_found", "a response sent with store: false is not kept"


def check_function_call_round_trip():
    marker = unique("weather")
    step = {"say": "Let me look.", "call": [{"name": "get_weather", "arguments": {"city": "Paris"}}]}
    r = client.responses.create(model="auto", input=directed(marker, toolScript=[step]), tools=[WEATHER])
    calls = [o for o in r.output if o.type == "function_call"]
    assert len(calls) == 1, r.output
    assert calls[0].name == "get_weather" and json.loads(calls[0].arguments) == {"city": "Paris"}, calls[0]
    assert calls[0].call_id.startswith("call_"), calls[0].call_id
    assert "TOOL_CALLS" not in r.output_text and r.output_text.startswith("Let me look."), r.output_text
    out = {"type": "function_call_output", "call_id": calls[0].call_id, "output": "sunny, 21 C"}
    r2 = client.responses.create(model="auto", input=[out], previous_response_id=r.id, tools=[WEATHER])
    assert not [o for o in r2.output if o.type == "function_call"], r2.output
    assert "sunny, 21 C" in r2.output_text, r2.output_text


def check_streamed_function_call():
    marker = unique("streamed weather")
    step = {"call": [{"name": "get_weather", "arguments": {"city": "Rome"}}]}
    events = list(client.responses.create(model="auto", stream=True, input=directed(marker, toolScript=[step]), tools=[WEATHER]))
    kinds = [e.type for e in events]
    args = "".join(e.delta for e in events if e.type == "response.function_call_arguments.delta")
    assert json.loads(args) == {"city": "Rome"}, args
    done = [e.item for e in events if e.type == "response.output_item.done" and e.item.type == "function_call"]
    assert len(done) == 1 and done[0].name == "get_weather", done
    assert kinds[-1] == "response.completed", kinds


def check_custom_tool_gets_its_raw_input():
    marker = unique("patch")
    step = {"call": [{"name": "apply_patch", "arguments": {"input": PATCH}}]}
    events = list(client.responses.create(model="auto", stream=True, input=directed(marker, toolScript=[step]), tools=[APPLY_PATCH]))
    calls = [e.item for e in events if e.type == "response.output_item.done" and e.item.type == "custom_tool_call"]
    assert len(calls) == 1 and calls[0].input == PATCH, calls
    streamed = "".join(e.delta for e in events if e.type == "response.custom_tool_call_input.delta")
    assert streamed == PATCH, repr(streamed)
    # The output goes back with the whole history, as Codex sends it (no store).
    items = [
        {"role": "user", "content": directed(marker, toolScript=[step])},
        calls[0].model_dump(exclude_none=True),
        {"type": "custom_tool_call_output", "call_id": calls[0].call_id, "output": "Done! hello.txt added"},
    ]
    r = client.responses.create(model="auto", input=items, tools=[APPLY_PATCH], store=False)
    assert "Done! hello.txt added" in r.output_text, r.output_text


def check_errors():
    e = expect(openai.NotFoundError, lambda: client.responses.create(model="no-such-model", input="hi"))
    assert e.code == "model_not_found", e.code
    e = expect(openai.NotFoundError, lambda: client.responses.create(model="no-such-model", input="hi", stream=True))
    e = expect(openai.BadRequestError, lambda: client.responses.create(model="auto", input="hi", tools=[{"type": "file_search", "vector_store_ids": ["vs_1"]}]))
    assert e.param == "tools[0].type" and "file_search" in e.message, (e.param, e.message)
    # Codex offers OpenAI's web search with every request: left out, the request is answered.
    r = client.responses.create(model="auto", input=unique("search offered"), tools=[{"type": "web_search"}])
    assert r.output_text.startswith("Echo: search offered"), r.output_text
    e = expect(openai.RateLimitError, lambda: client.responses.create(model="auto", input=directed(unique("rl"), fail="rateLimit")))
    assert e.status_code == 429
    # A failure after the stream started is `response.failed`, with the reason.
    content = directed(unique("crash"), answer="one two three four five", chunkChars=3, crashAfterDeltas=2)
    events = list(client.responses.create(model="auto", stream=True, input=content))
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert text == "one tw", text
    assert events[-1].type == "response.failed", [e.type for e in events]
    assert events[-1].response.status == "failed" and "Cursor" in events[-1].response.error.message, events[-1]


def check_a_required_call_that_never_comes_fails():
    # The model (the double's script) answers in text although a call is required; the engine asks
    # once more, and when it still does not call, the request fails rather than look complied.
    step = {"say": "I would rather just talk."}
    e = expect(openai.APIStatusError, lambda: client.responses.create(
        model="auto", input=directed(unique("stubborn"), toolScript=[step]), tools=[WEATHER], tool_choice="required"))
    assert e.status_code == 502 and e.code == "tool_call_required", (e.status_code, e.code)
    assert "tool_choice" in e.message, e.message
    events = list(client.responses.create(model="auto", stream=True, input=directed(unique("stubborn, streamed"), toolScript=[step]),
                                          tools=[WEATHER], tool_choice={"type": "function", "name": "get_weather"}))
    assert events[-1].type == "response.failed", [e.type for e in events]
    assert events[-1].response.error.code == "tool_call_required", events[-1].response.error
    # Chat completions alike.
    chat = {"type": "function", "function": {"name": "get_weather", "parameters": WEATHER["parameters"]}}
    e = expect(openai.APIStatusError, lambda: client.chat.completions.create(
        model="auto", messages=[{"role": "user", "content": directed(unique("stubborn chat"), toolScript=[step])}],
        tools=[chat], tool_choice="required"))
    assert e.status_code == 502 and e.code == "tool_call_required", (e.status_code, e.code)


CHECKS = [
    check_basic,
    check_streaming_event_sequence,
    check_previous_response_id_continues_the_chat,
    check_without_store_the_history_continues_the_chat,
    check_function_call_round_trip,
    check_streamed_function_call,
    check_custom_tool_gets_its_raw_input,
    check_errors,
    check_a_required_call_that_never_comes_fails,
]


if __name__ == "__main__":
    sys.exit(run_checks(f"openai {openai.__version__}", CHECKS))

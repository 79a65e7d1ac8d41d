"""What the HTTP clients' tests share: scripting the CLI test double, reading what reached it (its
print-mode record or its ACP session store), and running a file's checks.

The clients (openai_client.py, responses_client.py, anthropic_client.py) import it from their own
folder, which Python puts first on the path when it runs one of them. It reads, from the
environment the Rust test sets:
  OPEN_RECORD        the CLI double's record file (print mode)
  OPEN_ACP_SESSIONS  on ACP: the double's session store
  BACKEND            `print` (default) or `acp`
"""

import json
import os
import sys
import time
import traceback
import urllib.error
import urllib.request
import uuid

OPEN_RECORD = os.environ["OPEN_RECORD"]
BACKEND = os.environ.get("BACKEND", "print")
ACP_SESSIONS = os.environ.get("OPEN_ACP_SESSIONS", "")

UNICODE = "Grüße, 世界! ✓ 🎉 naïve café"
THINKING = "Let me think… über ✓"


def directed(text, **scenario):
    """A user message that scripts the CLI double (see cli-double/README.md)."""
    return f"[[double:{json.dumps(scenario)}]]\n{text}"


def unique(label):
    return f"{label} {uuid.uuid4().hex[:12]}"


def print_runs():
    """The double's record: one entry per CLI invocation, chat turns only."""
    with open(OPEN_RECORD, encoding="utf-8") as f:
        runs = [json.loads(line) for line in f if line.strip()]
    return [r for r in runs if r["subcommand"] == "print"]


def acp_turns():
    """On ACP, the turns in the double's session store, in print-mode records' terms: `sessionId`,
    `cwd`, `prompt` and `stdin` (the prompt text as sent), `pid` (the agent process), and what only
    ACP has: `mode`, `model`, `stopReason`, `agent` (what was streamed). Stored when a turn ends."""
    turns = []
    for entry in os.scandir(ACP_SESSIONS) if os.path.isdir(ACP_SESSIONS) else []:
        try:
            with open(os.path.join(entry.path, "cursor-agent-double.json"), encoding="utf-8") as f:
                session = json.load(f)
        except (OSError, ValueError):
            continue  # written through a rename: a folder without its file yet
        for t in session["turns"]:
            turns.append({"sessionId": session["sessionId"], "cwd": session["cwd"], "prompt": t["user"], "stdin": t["user"], **t})
    return sorted(turns, key=lambda t: t["atMs"])


def chat_turns():
    """What reached the CLI, one entry per turn: print-mode runs or ACP turns."""
    return acp_turns() if BACKEND == "acp" else print_runs()


def run_with(marker, latest=False):
    """The recorded CLI turn whose prompt contains `marker` (waits for the double to record it):
    the first, or with `latest` the last (a request sent again)."""
    deadline = time.time() + 10
    while time.time() < deadline:
        found = [r for r in chat_turns() if marker in (r.get("prompt") or r.get("stdin") or "")]
        if found:
            return found[-1] if latest else found[0]
        time.sleep(0.05)
    raise AssertionError(f"no CLI turn recorded for {marker!r}")


def resume_id(run):
    argv = run["argv"]
    return argv[argv.index("--resume") + 1] if "--resume" in argv else None


def continues(later, earlier):
    """Whether turn `later` ran in the chat of turn `earlier`: print mode resumed its chat id, ACP
    prompted the same session."""
    if BACKEND == "acp":
        return later["sessionId"] == earlier["sessionId"]
    return resume_id(later) == earlier["sessionId"]


def model_of(run):
    """The model the CLI was told: ACP's SKU before its parameters, print mode's `--model`."""
    if BACKEND == "acp":
        return run["model"].split("[")[0]
    argv = run["argv"]
    return argv[argv.index("--model") + 1] if "--model" in argv else None


def turn_mode(run):
    if BACKEND == "acp":
        return run["mode"]
    argv = run["argv"]
    return argv[argv.index("--mode") + 1]


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except FileNotFoundError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def http(method, url, body=None, headers=None):
    """A plain HTTP request (the standard library, not the client under test): (status, headers, body)."""
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def expect(exc_type, fn):
    try:
        fn()
    except exc_type as e:
        return e
    raise AssertionError(f"expected {exc_type.__name__}")


def run_checks(sdk, checks):
    """Every check, each reported `ok` or `FAIL` (with its traceback); the last line is
    `N passed, N failed`. Returns the exit code."""
    print(f"{sdk}, Python {sys.version.split()[0]}, backend {BACKEND}, {len(checks)} checks")
    passed = failed = 0
    for check in checks:
        name = check.__name__.removeprefix("check_")
        started = time.time()
        try:
            check()
        except Exception:  # noqa: BLE001 - every failure is reported, then the next check runs
            failed += 1
            print(f"FAIL {name}")
            traceback.print_exc(file=sys.stdout)
        else:
            passed += 1
            print(f"ok   {name} ({time.time() - started:.2f} s)")
        sys.stdout.flush()
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0

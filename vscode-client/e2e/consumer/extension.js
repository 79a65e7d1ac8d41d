// The API half of the end-to-end test: another extension using the Cursor models through
// `vscode.lm`, the way any extension would. It only observes and writes what it saw to
// $CURSOR_BRIDGE_E2E_OUT/api-result.json; check.cjs judges. Runs once, at start-up, before the
// Playwright driver touches the Chat view (the driver waits for `done`), because some steps change
// settings, the model list and kill the sidecar.
//
// Each prompt carries a `[[double:{…}]]` directive that scripts the CLI test double's answer, and a
// tag ("e2e-api <step>") by which check.cjs finds the step's CLI run in the double's record.

const vscode = require('vscode');
const fs = require('fs');
const path = require('path');

const OUT = process.env.CURSOR_BRIDGE_E2E_OUT;
const RECORD = process.env.CURSOR_DOUBLE_RECORD;
const MODELS_FILE = process.env.CURSOR_DOUBLE_MODELS_FILE;
const MODELS_AFTER = process.env.CURSOR_BRIDGE_E2E_MODELS_AFTER;
const BRIDGE_ID = 'cursor-bridge.cursor-bridge';
const MODEL_ID = 'composer-2.5';
const NEW_MODEL_ID = 'e2e-new-model';
const MISSING_CLI = '/nonexistent/e2e/cursor-agent';

// Non-ASCII on purpose: multi-byte UTF-8 split across deltas must come out intact.
const STREAM_ANSWER = 'Grüße aus Köln — 東京タワー 🗼 naïve façade ✓ (streamed answer)';
const STREAM_THINKING = 'Überlegung: zuerst die Frage lesen … 思考中 🤔';
const SLOW = { chunkChars: 2, deltaDelayMs: 100 }; // ~10 s for the long answers below
const LONG_ANSWER = 'This answer streams slowly so that it can be interrupted halfway through. '.repeat(3);

const directive = (scenario) => `[[double:${JSON.stringify(scenario)}]]`;

// The Copilot harness emulation (docs/vscode-provider.md §16): its bridge's tools include Responses
// custom tools as `{input: string}` functions.
const HARNESS_PATCH = '*** Begin Patch\n*** Add File: NOTES.md\n+hi\n*** End Patch\n';
const HARNESS_INSTRUCTIONS = 'You are the GitHub Copilot CLI agent, running in VS Code (e2e emulation of the Copilot harness).';
const HARNESS_TOOLS = [
  { name: 'apply_patch', description: 'Apply a patch (V4A diff)', inputSchema: { type: 'object', properties: { input: { type: 'string' } }, required: ['input'] } },
  { name: 'view', description: 'Read a file', inputSchema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] } },
  { name: 'bash', description: 'Run a shell command', inputSchema: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] } },
];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
/** A 1×1 PNG, the image the `image` step attaches. */
const IMAGE_PNG_BASE64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';

exports.activate = function activate() {
  if (!OUT) return; // installed outside the e2e: do nothing
  const result = {
    done: false,
    vscodeVersion: vscode.version,
    appName: vscode.env.appName,
    thinkingPartClass: typeof vscode.LanguageModelThinkingPart,
    env: Object.fromEntries(
      ['CURSOR_DOUBLE_RECORD', 'CURSOR_DOUBLE_STARTUP_MS', 'CURSOR_DOUBLE_MODELS_FILE', 'CURSOR_BRIDGE_STATE_DIR', 'CURSOR_BRIDGE_LOG_DIR'].map(
        (k) => [k, process.env[k] ?? null],
      ),
    ),
    // Where each layer of settings puts cursorBridge.cliPath (machine-scoped settings behave
    // differently in a remote window such as code-server's).
    cliPathAtStart: vscode.workspace.getConfiguration('cursorBridge').inspect('cliPath'),
    t0: Date.now(),
    steps: {},
  };
  const write = () => {
    const file = path.join(OUT, 'api-result.json');
    fs.writeFileSync(`${file}.tmp`, JSON.stringify(result, null, 2));
    fs.renameSync(`${file}.tmp`, file); // the driver polls this file: never let it see half of it
  };
  write();
  reportBridgeSettings();
  // Not awaited inside activate(): selecting models fires activation events of their own.
  setTimeout(() => {
    runSteps(result, write)
      .catch((e) => (result.fatal = String((e && e.stack) || e)))
      .finally(() => {
        result.done = true;
        result.totalMs = Date.now() - result.t0;
        write();
      });
  }, 0);
};

exports.deactivate = function deactivate() {};

/**
 * The `cursorBridge` settings as the extension host sees them, in bridge-settings.json, rewritten
 * on every change: the driver's Copilot tools phase edits settings.json and waits here until the
 * host (and so the bridge, which reads its settings per request) has them.
 */
function reportBridgeSettings() {
  const file = path.join(OUT, 'bridge-settings.json');
  const report = () => {
    const c = vscode.workspace.getConfiguration('cursorBridge');
    fs.writeFileSync(`${file}.tmp`, JSON.stringify({ tools: c.get('tools'), backend: c.get('backend'), at: Date.now() }));
    fs.renameSync(`${file}.tmp`, file);
  };
  report();
  vscode.workspace.onDidChangeConfiguration((e) => {
    if (e.affectsConfiguration('cursorBridge')) report();
  });
}

// ------------------------------------------------------------------------------------------ helpers

async function waitFor(what, timeoutMs, probe, everyMs = 100) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}

function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no result within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function recordLines() {
  try {
    return fs
      .readFileSync(RECORD, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
  } catch {
    return [];
  }
}

/** The backend the session runs on (`cursorBridge.backend`: print or acp). */
const backend = () => vscode.workspace.getConfiguration('cursorBridge').get('backend');

/**
 * On ACP, the turns in the double's session store (cli-double README §8.6: one file per session,
 * each turn with its prompt, what it streamed, its agent's pid and how it ended), written as a
 * turn ends.
 */
function acpTurns() {
  const store = path.join(process.env.HOME || '', '.cursor', 'acp-sessions');
  const turns = [];
  let dirs = [];
  try {
    dirs = fs.readdirSync(store);
  } catch {
    return turns;
  }
  for (const dir of dirs) {
    try {
      const session = JSON.parse(fs.readFileSync(path.join(store, dir, 'cursor-agent-double.json'), 'utf8'));
      for (const t of session.turns) turns.push({ sessionId: session.sessionId, prompt: t.user, ...t });
    } catch {
      // written through a rename: a folder without its file yet
    }
  }
  return turns;
}

/** What the double recorded of the turn whose prompt has `tag`: its print-mode run, or its ACP turn. */
function findRun(tag) {
  const has = (l) => typeof l.prompt === 'string' && l.prompt.includes(tag);
  return waitFor(`the CLI run of "${tag}" in the record`, 10_000, () =>
    backend() === 'acp' ? acpTurns().find(has) : recordLines().find((l) => l.subcommand === 'print' && has(l)),
  );
}

/** Dead, or a zombie nobody has reaped yet (it runs no code either way). */
function processState(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
  } catch {
    return 'gone';
  }
}

function describePart(p) {
  const C = vscode;
  if (p instanceof C.LanguageModelTextPart) return { kind: 'text', value: p.value };
  if (typeof C.LanguageModelThinkingPart === 'function' && p instanceof C.LanguageModelThinkingPart) {
    return { kind: 'thinking', value: Array.isArray(p.value) ? p.value.join('') : p.value, id: p.id, metadata: p.metadata };
  }
  if (typeof C.LanguageModelDataPart === 'function' && p instanceof C.LanguageModelDataPart) {
    return { kind: 'data', mimeType: p.mimeType, text: new TextDecoder().decode(p.data) };
  }
  if (p instanceof C.LanguageModelToolCallPart) return { kind: 'toolCall', name: p.name };
  return { kind: 'other', ctor: p && p.constructor && p.constructor.name, keys: p && typeof p === 'object' ? Object.keys(p) : typeof p };
}

/**
 * Reads a whole response. `onPart` sees each part as it arrives. Returns what a consumer can see:
 * the parts (described), the text, the thinking, the raw parts (to build a later turn's history)
 * and the error the stream ended with, if any.
 */
async function collect(response, onPart) {
  const parts = [];
  const raw = [];
  let error = null;
  try {
    for await (const part of response.stream) {
      const d = describePart(part);
      d.atMs = Date.now();
      parts.push(d);
      raw.push(part);
      if (onPart) await onPart(d, part);
    }
  } catch (e) {
    error = { name: e && e.name, message: String(e && e.message !== undefined ? e.message : e), code: e && e.code };
  }
  const of = (kind) => parts.filter((p) => p.kind === kind);
  return {
    firstPartAtMs: parts.length ? parts[0].atMs : null,
    text: of('text').map((p) => p.value).join(''),
    textParts: of('text').length,
    thinking: of('thinking').map((p) => p.value).join(''),
    thinkingParts: of('thinking').length,
    dataParts: of('data').map((p) => ({ mimeType: p.mimeType, text: p.text })),
    otherParts: parts.filter((p) => !['text', 'thinking', 'data'].includes(p.kind)),
    error,
    raw,
  };
}

/** An assistant message carrying what the consumer got back: text and the session marker. */
function assistantTurn(answer) {
  const content = answer.raw.filter(
    (p) => p instanceof vscode.LanguageModelTextPart || (typeof vscode.LanguageModelDataPart === 'function' && p instanceof vscode.LanguageModelDataPart && p.mimeType === 'stateful_marker'),
  );
  return vscode.LanguageModelChatMessage.Assistant(content);
}

const summary = ({ raw, ...rest }) => rest;

// ------------------------------------------------------------------------------------------ steps

async function runSteps(result, write) {
  const step = async (name, timeoutMs, fn) => {
    const s = (result.steps[name] = { startedAtMs: Date.now() - result.t0 });
    write();
    try {
      await withTimeout(fn(s), timeoutMs, name);
      s.completed = true;
    } catch (e) {
      s.failure = String((e && e.stack) || e);
    }
    s.ms = Date.now() - result.t0 - s.startedAtMs;
    write();
  };

  const ext = vscode.extensions.getExtension(BRIDGE_ID);
  if (!ext) throw new Error(`${BRIDGE_ID} is not installed`);
  const bridge = ext.isActive ? ext.exports : await ext.activate();
  const sidecarPid = () => bridge && bridge.sidecarPid;
  const select = (selector = { vendor: 'cursor' }) => vscode.lm.selectChatModels(selector);
  let model;

  // The first ask after activation, once, as an extension selecting Cursor models at start-up
  // would: no retry, no waiting for a change event (the list was never loaded in this profile).
  await step('firstSelect', 30_000, async (s) => {
    const t = Date.now();
    const found = await select();
    s.ms = Date.now() - t;
    s.ids = found.map((m) => m.id);
  });

  await step('models', 90_000, async (s) => {
    // The extension fills its list in the background after activation: wait for it.
    const models = await waitFor('Cursor models', 60_000, async () => {
      const found = await select();
      return found.some((m) => m.id === MODEL_ID) ? found : undefined;
    }, 250);
    s.models = models.map((m) => ({ id: m.id, name: m.name, vendor: m.vendor, family: m.family, version: m.version, maxInputTokens: m.maxInputTokens }));
    model = models.find((m) => m.id === MODEL_ID);
    s.sidecarPid = await waitFor('the sidecar pid', 30_000, sidecarPid);
  });
  if (!model) return;

  let first; // the streamed answer, reused as history by the resume step
  const firstPrompt = `e2e-api stream: greet me ${directive({ thinking: STREAM_THINKING, answer: STREAM_ANSWER, chunkChars: 3 })}`;
  await step('stream', 60_000, async (s) => {
    s.prompt = firstPrompt;
    s.expectedAnswer = STREAM_ANSWER;
    s.expectedThinking = STREAM_THINKING;
    // The first message of a freshly opened window: nothing asked before it. How long the
    // extension host had been up when it was sent (it starts with the window), and when its first
    // part arrived (docs/performance.md, "A freshly opened window").
    s.hostUptimeAtSendMs = Math.round(process.uptime() * 1000);
    const sent = Date.now();
    const response = await model.sendRequest([vscode.LanguageModelChatMessage.User(firstPrompt)], {});
    first = await collect(response);
    Object.assign(s, summary(first));
    s.firstPartMs = first.firstPartAtMs === null ? null : first.firstPartAtMs - sent;
  });

  await step('resume', 60_000, async (s) => {
    if (!first) throw new Error('no first answer to continue from');
    const second = `e2e-api resume: and now? ${directive({ answer: 'Zweite Antwort ✓ — résumé' })}`;
    s.prompt = second;
    s.expectedAnswer = 'Zweite Antwort ✓ — résumé';
    s.historyParts = assistantTurn(first).content.map((p) => describePart(p).kind);
    const messages = [vscode.LanguageModelChatMessage.User(firstPrompt), assistantTurn(first), vscode.LanguageModelChatMessage.User(second)];
    Object.assign(s, summary(await collect(await model.sendRequest(messages, {}))));
  });

  // An image attached to a message (a data part, as the Chat view sends one): on ACP it goes to
  // Cursor's model with the prompt; in print mode the answer says it was not sent.
  await step('image', 60_000, async (s) => {
    s.prompt = `e2e-api image: what is in this picture? ${directive({ answer: 'A tiny PNG.' })}`;
    s.imageBase64 = IMAGE_PNG_BASE64;
    s.imageInput = (await select({ vendor: 'cursor', id: MODEL_ID }))[0]?.capabilities?.supportsImageToText ?? null;
    const image = vscode.LanguageModelDataPart.image(Buffer.from(IMAGE_PNG_BASE64, 'base64'), 'image/png');
    const message = vscode.LanguageModelChatMessage.User([new vscode.LanguageModelTextPart(s.prompt), image]);
    Object.assign(s, summary(await collect(await model.sendRequest([message], {}))));
  });

  // VS Code's Copilot harness, as its bridge calls a provider (docs/vscode-provider.md §16): no
  // conversation id, System instructions (role 3, proposed API), the client's tools; a follow-up
  // with `previous_response_id` is the previous answer's marker, the instructions and only what is
  // new (a tool round: the result alone). Copilot's tools are on for it (`cursorBridge.tools`).
  await step('harness', 150_000, async (s) => {
    const config = () => vscode.workspace.getConfiguration('cursorBridge');
    const before = config().inspect('tools').globalValue;
    await config().update('tools', 'copilot', vscode.ConfigurationTarget.Global);
    await waitFor('cursorBridge.tools to read copilot', 10_000, () => config().get('tools') === 'copilot');
    try {
      const system = () => new vscode.LanguageModelChatMessage(3, HARNESS_INSTRUCTIONS);
      const user = (content) => vscode.LanguageModelChatMessage.User(content);
      const options = { modelOptions: {}, tools: HARNESS_TOOLS };
      const ask = async (name, messages) => {
        const got = await collect(await model.sendRequest(messages, options));
        s[name] = summary(got);
        if (got.error) throw new Error(`${name}: ${got.error.message}`);
        return got;
      };
      /** The previous answer's marker alone, as the bridge turns `previous_response_id` into it. */
      const previous = (answer) => {
        const marker = answer.raw.find((p) => typeof vscode.LanguageModelDataPart === 'function' && p instanceof vscode.LanguageModelDataPart && p.mimeType === 'stateful_marker');
        if (!marker) throw new Error('an answer without a stateful_marker');
        return vscode.LanguageModelChatMessage.Assistant([marker]);
      };
      s.prompts = {
        one: `e2e-api harness-one: add NOTES.md ${directive({ toolScript: [{ say: 'Patching.', call: [{ name: 'apply_patch', arguments: { input: HARNESS_PATCH } }] }] })}`,
        three: `e2e-api harness-three: what did you add? ${directive({ answer: 'NOTES.md ✓' })}`,
        four: `e2e-api harness-four: thanks ${directive({ answer: 'You are welcome ✓' })}`,
      };
      s.patch = HARNESS_PATCH;
      const a1 = await ask('one', [system(), user(s.prompts.one)]);
      const call = a1.raw.find((p) => p instanceof vscode.LanguageModelToolCallPart);
      if (!call) throw new Error('the model called no tool');
      s.call = { name: call.name, input: call.input, inputType: typeof (call.input && call.input.input) };
      const result = new vscode.LanguageModelToolResultPart(call.callId, [new vscode.LanguageModelTextPart('Done! Added NOTES.md (e2e-harness-result)')]);
      const a2 = await ask('two', [previous(a1), system(), user([result])]);
      const a3 = await ask('three', [previous(a2), system(), user(s.prompts.three)]);
      const trimmed = [previous(a3), system(), user(s.prompts.three), vscode.LanguageModelChatMessage.Assistant(a3.text), user(s.prompts.four)];
      const a4 = await ask('four', trimmed);
      s.markers = [a1, a2, a3, a4].map((a) => a.dataParts.filter((p) => p.mimeType === 'stateful_marker').map((p) => p.text).pop() ?? null);
    } finally {
      await config().update('tools', before, vscode.ConfigurationTarget.Global);
    }
  });

  await step('cancel', 60_000, async (s) => {
    const prompt = `e2e-api cancel: talk slowly ${directive({ answer: LONG_ANSWER, ...SLOW })}`;
    s.prompt = prompt;
    // Stop in a conversation that has an answer already: that is the session that stays warm on
    // ACP (a new session whose very first turn is stopped is one nobody can continue, so its agent
    // is retired).
    const opener = `e2e-api opener: before the slow one ${directive({ answer: 'Ready.' })}`;
    const opened = await collect(await model.sendRequest([vscode.LanguageModelChatMessage.User(opener)], {}));
    const cts = new vscode.CancellationTokenSource();
    let cancelledAt = 0;
    const history = [vscode.LanguageModelChatMessage.User(opener), assistantTurn(opened), vscode.LanguageModelChatMessage.User(prompt)];
    const response = await model.sendRequest(history, {}, cts.token);
    const got = await collect(response, (d) => {
      if (!cancelledAt && d.kind === 'text') {
        cancelledAt = Date.now();
        cts.cancel();
      }
    });
    s.streamEndedAfterCancelMs = cancelledAt ? Date.now() - cancelledAt : null;
    s.textPartsAfterCancel = Math.max(0, got.textParts - 1); // the first one triggered the cancel
    Object.assign(s, summary(got));
    s.fullAnswerChars = LONG_ANSWER.length;
    if (!cancelledAt) throw new Error('no text arrived, so nothing was cancelled');
    s.backend = backend();
    const run = await findRun('e2e-api cancel');
    s.cliPid = run.pid;
    if (s.backend === 'acp') {
      // The conversation's agent stays warm: Stop ends the turn (stored as it ends), not the process.
      s.turnStopReason = run.stopReason;
      s.turnEndedAfterCancelMs = run.atMs - cancelledAt; // the double's clock: when the turn ended
      s.streamedChars = run.agent.length;
    } else {
      await waitFor(`CLI pid ${run.pid} to end`, 10_000, () => ['gone', 'Z'].includes(processState(run.pid)), 10);
      s.cliDeadAfterCancelMs = Date.now() - cancelledAt;
    }
    s.cliEndState = processState(run.pid);
  });

  await step('refresh', 60_000, async (s) => {
    if (!MODELS_FILE || !MODELS_AFTER) throw new Error('CURSOR_DOUBLE_MODELS_FILE / CURSOR_BRIDGE_E2E_MODELS_AFTER not set');
    s.before = (await select()).map((m) => m.id);
    let events = 0;
    const sub = vscode.lm.onDidChangeChatModels(() => events++);
    try {
      // The double reads its model list from this file on every `models` call.
      fs.copyFileSync(MODELS_AFTER, MODELS_FILE);
      await vscode.commands.executeCommand('cursorBridge.refreshModels');
      const after = await waitFor('the new model in selectChatModels', 30_000, async () => {
        const found = await select();
        return events > 0 && found.some((m) => m.id === NEW_MODEL_ID) ? found : undefined;
      }, 200);
      s.after = after.map((m) => m.id);
      const added = after.find((m) => m.id === NEW_MODEL_ID);
      s.newModel = { id: added.id, name: added.name, maxInputTokens: added.maxInputTokens };
    } finally {
      s.changeEvents = events;
      sub.dispose();
    }
  });

  await step('missingCli', 90_000, async (s) => {
    const config = () => vscode.workspace.getConfiguration('cursorBridge');
    const original = config().get('cliPath');
    s.originalCliPath = original;
    s.inspectBefore = config().inspect('cliPath');
    const restartWith = async (value, why) => {
      const before = sidecarPid();
      await config().update('cliPath', value, vscode.ConfigurationTarget.Global);
      return waitFor(`the sidecar to restart (${why})`, 30_000, () => {
        const now = sidecarPid();
        return now !== undefined && now !== before ? now : undefined;
      });
    };
    try {
      s.pidWithMissingCli = await restartWith(MISSING_CLI, 'CLI path set to a missing file');
      const prompt = `e2e-api missing-cli: hello? ${directive({ answer: 'this must never be answered' })}`;
      const got = await collect(await model.sendRequest([vscode.LanguageModelChatMessage.User(prompt)], {}));
      Object.assign(s, summary(got));
    } finally {
      s.pidAfterRestore = await restartWith(original, 'CLI path restored');
    }
  });

  await step('recovery', 120_000, async (s) => {
    const one = `e2e-api recovery-one: remember this ${directive({ answer: 'Erste Antwort ✓' })}`;
    const a1 = await collect(await model.sendRequest([vscode.LanguageModelChatMessage.User(one)], {}));
    s.first = summary(a1);
    s.firstPrompt = one;

    // Second turn: the sidecar is killed as soon as the answer starts.
    const two = `e2e-api recovery-two: a long one ${directive({ answer: LONG_ANSWER, ...SLOW })}`;
    let killed;
    const a2 = await collect(
      await model.sendRequest([vscode.LanguageModelChatMessage.User(one), assistantTurn(a1), vscode.LanguageModelChatMessage.User(two)], {}),
      (d) => {
        if (!killed && d.kind === 'text') {
          killed = sidecarPid();
          process.kill(killed, 'SIGKILL');
        }
      },
    );
    s.killedPid = killed ?? null;
    s.killed = summary(a2);
    s.restartedPid = await waitFor('a restarted sidecar', 30_000, () => {
      const now = sidecarPid();
      return now !== undefined && now !== killed ? now : undefined;
    });

    // Third turn, like Try Again: the failed request is not in the history (as in the Chat view).
    const three = `e2e-api recovery-three: still there? ${directive({ answer: 'Dritte Antwort ✓ nach dem Neustart' })}`;
    s.thirdPrompt = three;
    s.expectedThird = 'Dritte Antwort ✓ nach dem Neustart';
    const a3 = await collect(
      await model.sendRequest([vscode.LanguageModelChatMessage.User(one), assistantTurn(a1), vscode.LanguageModelChatMessage.User(three)], {}),
    );
    s.third = summary(a3);
    s.pidAfter = sidecarPid() ?? null;
  });
}

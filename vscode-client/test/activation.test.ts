// The whole extension (activate → provider → commands → deactivate) in plain Node: the `vscode`
// stub stands in for the host, the real debug sidecar and the CLI double for Cursor. What a
// headless VS Code e2e test will check in a real window, minus the window.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type * as vscode from 'vscode';
import { API_KEY_SECRET, Command, InternalCommand } from '../src/commands';
import { activate, deactivate, type CursorBridgeApi } from '../src/extension';
import type { CursorChatProvider } from '../src/provider';
import {
  alive,
  binariesOrSkip,
  channelLines,
  directed,
  DOUBLE_BIN,
  fakeContext,
  loadRequest,
  model,
  secrets,
  SIDECAR_BIN,
  until,
} from './helpers';
import * as stub from './vscode-stub';

describe('the extension, activated against the real sidecar', { skip: binariesOrSkip() }, () => {
  let dir: string;
  let api: CursorBridgeApi;
  let provider: CursorChatProvider;
  const store = secrets();
  const token = new stub.CancellationTokenSource().token as vscode.CancellationToken;

  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cursor-bridge-activation-'));
    fs.mkdirSync(path.join(dir, 'ws'));
    // The sidecar inherits this process's environment: keep its state and the double's files here.
    Object.assign(process.env, {
      HOME: path.join(dir, 'home'),
      CURSOR_BRIDGE_STATE_DIR: path.join(dir, 'state'),
      CURSOR_BRIDGE_LOG_DIR: path.join(dir, 'logs'),
    });
    delete process.env.CURSOR_BRIDGE_CLI_PATH;
    stub.stubState.workspaceFolders = [{ uri: { fsPath: path.join(dir, 'ws'), scheme: 'file' } }];
    stub.stubState.config = {
      'cursorBridge.sidecarPath': SIDECAR_BIN,
      'cursorBridge.cliPath': DOUBLE_BIN,
      'cursorBridge.logLevel': 'debug',
    };
    api = activate(fakeContext(path.join(dir, 'extension'), store) as unknown as vscode.ExtensionContext);
    provider = stub.stubState.providers.get('cursor') as CursorChatProvider;
  });

  after(async () => {
    await deactivate();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const logLines = () => channelLines();

  it('registers the cursor vendor and the commands at once, and warms up in the background', async () => {
    assert.ok(provider, 'provider registered');
    assert.deepEqual(
      [...stub.stubState.commands.keys()].sort(),
      [...Object.values(Command), ...Object.values(InternalCommand)].sort(),
    );
    await until('the sidecar to start', () => api.sidecarPid !== undefined);
  });

  it('lists the double’s models', async () => {
    const infos = await provider.provideLanguageModelChatInformation({ silent: false }, token);
    assert.ok(infos.length > 0);
    assert.ok(infos.every((i) => i.capabilities.toolCalling === true && i.maxInputTokens > 0));
    const silent = await provider.provideLanguageModelChatInformation({ silent: true }, token);
    assert.deepEqual(
      silent.map((i) => i.id),
      infos.map((i) => i.id),
    );
  });

  it('answers a Chat view request, then resumes the session in the next turn (Cursor’s own tools: cursorBridge.tools = cursor)', async (t) => {
    // The CLI's own tool shows as a line only when Cursor runs its tools; with `copilot` and a
    // sidecar that has client tools, Cursor's tools are off.
    stub.stubState.config['cursorBridge.tools'] = 'cursor';
    t.after(() => delete stub.stubState.config['cursorBridge.tools']);
    const first = loadRequest('agent-first-turn');
    first.model = model('sonnet-5-thinking');
    const answer = 'The discount is applied after rounding.';
    const question = directed('Why does the cart total ignore the discount?', {
      answer,
      thinking: 'Look at the rounding.',
      tools: [{ kind: 'shell', args: { command: 'npm test' } }],
    });
    const wrapped = `<context>\nThe current date is 2026-11-29.\n</context>\n<userRequest>\n${question}\n</userRequest>\n`;
    const messages = [
      first.messages[0],
      first.messages[1],
      { role: 1, name: undefined, content: [new stub.LanguageModelTextPart(wrapped)] },
    ];
    const parts: unknown[] = [];
    await provider.provideLanguageModelChatResponse(
      first.model,
      messages as never,
      first.options,
      { report: (p) => void parts.push(p) },
      token,
    );
    const text = parts.map((p) => (p instanceof stub.LanguageModelTextPart ? p.value : '')).join('');
    assert.match(text, /> 🔧 shell: `npm test` ✓/);
    assert.ok(text.endsWith(answer), text);
    assert.ok(parts.some((p) => p instanceof stub.LanguageModelThinkingPart));
    const marker = parts.find(
      (p): p is stub.LanguageModelDataPart =>
        p instanceof stub.LanguageModelDataPart && p.mimeType === 'stateful_marker',
    );
    assert.ok(marker, 'marker reported');
    const markerText = new TextDecoder().decode(marker.data);
    assert.match(markerText, /^sonnet-5-thinking\\cursor-bridge:v1:cb-/);

    // Turn 2: the history as the Chat view sends it back (marker first in the assistant message).
    const second = [
      ...messages,
      { role: 2, name: undefined, content: [marker, new stub.LanguageModelTextPart(text)] },
      {
        role: 1,
        name: undefined,
        content: [new stub.LanguageModelTextPart('<userRequest>\nAnd how do I fix it?\n</userRequest>\n')],
      },
    ];
    const parts2: unknown[] = [];
    await provider.provideLanguageModelChatResponse(
      first.model,
      second as never,
      first.options,
      { report: (p) => void parts2.push(p) },
      token,
    );
    assert.ok(parts2.some((p) => p instanceof stub.LanguageModelTextPart));
    assert.ok(
      logLines().some((l) => /turn .* done .*\(resumed\)/.test(l)),
      logLines().join('\n'),
    );
  });

  it('explains a set-up problem as the answer', async () => {
    const r = loadRequest('ask-mode');
    r.model = model('auto');
    const messages = [
      { role: 1, name: undefined, content: [new stub.LanguageModelTextPart(directed('x', { fail: 'auth' }))] },
    ];
    const parts: unknown[] = [];
    await provider.provideLanguageModelChatResponse(
      r.model,
      messages as never,
      { ...r.options, modelOptions: { _conversationId: 'other' } },
      { report: (p) => void parts.push(p) },
      token,
    );
    const text = parts.map((p) => (p instanceof stub.LanguageModelTextPart ? p.value : '')).join('');
    assert.match(text, /not logged in/);
    assert.match(text, /Cursor Bridge: Set API Key/);
  });

  it('clears sessions with the command', async () => {
    await stub.commands.executeCommand(Command.clearSessions);
    assert.ok(
      stub.stubState.messages.some((m) => /cleared [1-9]\d* session/.test(m.text)),
      JSON.stringify(stub.stubState.messages),
    );
  });

  it('stores an API key from the input box and restarts the sidecar with it', async () => {
    const before = api.sidecarPid;
    stub.stubState.inputBoxAnswer = '  key_test_123  ';
    await stub.commands.executeCommand(Command.setApiKey);
    assert.equal(store.data.get(API_KEY_SECRET), 'key_test_123');
    await until('a new sidecar', () => api.sidecarPid !== undefined && api.sidecarPid !== before);
    assert.ok(!logLines().some((l) => l.includes('key_test_123')), 'the key never reaches the log');
    stub.stubState.inputBoxAnswer = '';
    await stub.commands.executeCommand(Command.setApiKey);
    assert.equal(store.data.has(API_KEY_SECRET), false, 'an empty value deletes it');
  });

  it('restarts when a setting that reaches the sidecar changes', async () => {
    await until('a running sidecar', () => api.sidecarPid !== undefined);
    const before = api.sidecarPid;
    stub.fireConfigurationChange(['cursorBridge.maxConcurrent']);
    await until('a new sidecar', () => api.sidecarPid !== undefined && api.sidecarPid !== before);
    const now = api.sidecarPid;
    stub.fireConfigurationChange(['cursorBridge.showToolActivity']);
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(api.sidecarPid, now, 'a client-side setting does not restart it');
  });

  it('restarts when the workspace is granted trust, so the sidecar learns of it', async () => {
    await until('a running sidecar', () => api.sidecarPid !== undefined);
    const before = api.sidecarPid;
    stub.grantWorkspaceTrust();
    await until('a new sidecar', () => api.sidecarPid !== undefined && api.sidecarPid !== before);
    assert.ok(
      logLines().some((l) => l.includes('restarting the sidecar: workspace trusted')),
      logLines().join('\n'),
    );
  });

  it('stops the sidecar on deactivate', async () => {
    const pid = api.sidecarPid;
    assert.ok(alive(pid));
    await deactivate();
    await until('the sidecar to exit', () => !alive(pid));
  });
});

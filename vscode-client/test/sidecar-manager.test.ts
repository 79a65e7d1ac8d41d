import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parseStderrLine } from '../src/client';
import { CrashTracker, restartOnChanges, SidecarManager, type SidecarManagerOptions } from '../src/sidecar-manager';
import { BridgeError, toBridgeError } from '../src/errors';
import { DELTA_KINDS, type ChatDelta, type ChatSendParams, type InitializeResult } from '../src/protocol';
import { alive, binariesOrSkip, directed, DOUBLE_BIN, memoryLog, SIDECAR_BIN, until } from './helpers';
import * as stub from './vscode-stub';

describe('parseStderrLine', () => {
  it('reads the level of tracing lines and drops the timestamp', () => {
    assert.deepEqual(parseStderrLine('2026-11-29T19:30:00.123456Z  WARN could not save the model cache path=/x'), {
      level: 'warn',
      text: 'could not save the model cache path=/x',
    });
    assert.deepEqual(parseStderrLine('2026-11-29T19:30:00Z ERROR turn{id=3}: boom'), {
      level: 'error',
      text: 'turn{id=3}: boom',
    });
  });
  it('logs anything else as a warning, verbatim', () => {
    assert.deepEqual(parseStderrLine('cursor-bridge: cannot start the async runtime: x'), {
      level: 'warn',
      text: 'cursor-bridge: cannot start the async runtime: x',
    });
  });
});

describe('CrashTracker', () => {
  it('gives up at the limit within the window only', () => {
    const t = new CrashTracker(5, 180_000);
    assert.equal(t.record(0), false);
    assert.equal(t.record(10_000), false);
    assert.equal(t.record(20_000), false);
    assert.equal(t.record(30_000), false);
    assert.equal(t.record(200_000), false, 'the first crashes fell out of the window');
    assert.equal(t.recent, 2);
    for (const at of [201_000, 202_000, 203_000]) t.record(at);
    assert.equal(t.record(204_000), true);
    t.reset();
    assert.equal(t.recent, 0);
  });
});

describe('restartOnChanges', () => {
  function wired() {
    const reasons: string[] = [];
    const config = new stub.EventEmitter<{ affectsConfiguration(section: string): boolean }>();
    const trust = new stub.EventEmitter<void>();
    const folders = new stub.EventEmitter<unknown>();
    const secret = new stub.EventEmitter<{ key: string }>();
    const subs = restartOnChanges(
      { restartSoon: (reason: string) => void reasons.push(reason) },
      {
        onDidChangeConfiguration: config.event,
        onDidGrantWorkspaceTrust: trust.event,
        onDidChangeWorkspaceFolders: folders.event,
      },
      { onDidChange: secret.event },
      'the-key',
    );
    return { reasons, config, trust, folders, secret, subs };
  }

  it('restarts when the workspace is granted trust (initialize.options.workspaceTrusted is read at start)', () => {
    const w = wired();
    w.trust.fire();
    assert.deepEqual(w.reasons, ['workspace trusted']);
  });
  it('restarts for folders, the API key and settings that reach the sidecar, not for others', () => {
    const w = wired();
    w.folders.fire({});
    w.secret.fire({ key: 'other' });
    w.secret.fire({ key: 'the-key' });
    w.config.fire({ affectsConfiguration: (s) => s === 'cursorBridge.showToolActivity' });
    w.config.fire({ affectsConfiguration: (s) => s === 'cursorBridge.allowUnattended' || s === 'cursorBridge' });
    assert.deepEqual(w.reasons, ['workspace folders changed', 'API key changed', 'settings changed: allowUnattended']);
    for (const d of w.subs) d.dispose();
    w.trust.fire();
    assert.equal(w.reasons.length, 3, 'disposed listeners do nothing');
  });
});

// ---------------------------------------------------------------------------------------------
// The real binary against the CLI double.

const SIDECAR = SIDECAR_BIN;
const DOUBLE = DOUBLE_BIN;
const skip = binariesOrSkip();

describe('SidecarManager with the real sidecar and the CLI double', { skip }, () => {
  let dir: string;
  const managers: SidecarManager[] = [];

  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cursor-bridge-client-'));
    fs.mkdirSync(path.join(dir, 'ws'));
  });
  after(async () => {
    await Promise.all(managers.map((m) => m.dispose()));
    fs.rmSync(dir, { recursive: true, force: true });
  });

  function manager(over: Partial<SidecarManagerOptions> = {}, binary = SIDECAR) {
    const log = memoryLog();
    const gaveUp: number[] = [];
    const m = new SidecarManager({
      log,
      launchConfig: async () => ({
        binary,
        env: {
          ...process.env,
          HOME: path.join(dir, 'home'),
          CURSOR_BRIDGE_STATE_DIR: path.join(dir, 'state'),
          CURSOR_BRIDGE_LOG_DIR: path.join(dir, 'logs'),
          CURSOR_BRIDGE_LOG: 'info',
          CURSOR_BRIDGE_CLI_PATH: '',
        },
        initialize: {
          protocolVersion: 1,
          clientInfo: { name: 'vscode-client unit test' },
          workspaceFolders: [path.join(dir, 'ws')],
          cliPath: DOUBLE,
          options: {
            requestTimeoutSeconds: 60,
            idleTimeoutSeconds: 30,
            maxConcurrent: 4,
            sessionTtlMinutes: 30,
            maxSessions: 50,
            force: false,
          },
        },
      }),
      onGaveUp: (n) => gaveUp.push(n),
      restartBackoffMs: 10,
      ...over,
    });
    managers.push(m);
    return { m, log, gaveUp };
  }

  const send = (turnId: string, text: string, extra: Partial<ChatSendParams> = {}): ChatSendParams => ({
    turnId,
    model: 'auto',
    mode: 'ask',
    messages: [{ role: 'user', text }],
    ...extra,
  });

  it('starts on demand, lists models, streams a turn and resumes it', async () => {
    const { m } = manager();
    assert.equal(m.running, false, 'nothing runs before the first request');
    const { models } = await m.request('models/list', {});
    assert.ok(models.length > 0);
    assert.ok(models.every((x) => x.id && x.maxInputTokens > 0));

    const deltas: ChatDelta[] = [];
    const sub = m.onDelta('t1', (d) => deltas.push(d));
    const answer = 'Grüße 🌍 from the double';
    const r1 = await m.request(
      'chat/send',
      send('t1', directed('hi', { answer, chunkChars: 4 }), { conversationId: 'conv-1' }),
    );
    sub.dispose();
    assert.equal(
      deltas
        .filter((d) => d.kind === 'text')
        .map((d) => (d.kind === 'text' ? d.text : ''))
        .join(''),
      answer,
    );
    assert.equal(deltas[0].kind, 'session');
    assert.ok(r1.sessionId);

    const r2 = await m.request(
      'chat/send',
      send('t2', 'again', {
        conversationId: 'conv-1',
        messages: [
          { role: 'user', text: directed('hi', { answer, chunkChars: 4 }) },
          { role: 'assistant', text: answer },
          { role: 'user', text: 'again' },
        ],
      }),
    );
    assert.equal(r2.sessionId, r1.sessionId);
    assert.equal(r2.resumed, true);
  });

  it('capabilities(): starts the sidecar and gives what its initialize answered', async () => {
    let ready: InitializeResult | undefined;
    const { m } = manager({ onReady: (r) => (ready = r) });
    assert.equal(m.running, false);
    const caps = await m.capabilities();
    assert.ok(m.running, 'started for the question');
    assert.deepEqual(caps, ready?.capabilities);
    for (const kind of DELTA_KINDS) assert.ok(caps.deltaKinds.includes(kind), kind);
    const pid = m.pid;
    assert.deepEqual(await m.capabilities(), caps);
    assert.equal(m.pid, pid, 'asked again: the same process, not another start');
  });

  it('maps turn errors to their kind', async () => {
    const { m } = manager();
    await assert.rejects(
      m.request('chat/send', send('t-auth', directed('x', { fail: 'auth' }))),
      (e: BridgeError) => e.kind === 'authRequired',
    );
    await assert.rejects(
      m.request('chat/send', send('t-rate', directed('x', { fail: 'rateLimit' }))),
      (e: BridgeError) => e.kind === 'rateLimited',
    );
  });

  it('cancels through the token: $/cancelRequest, a prompt -32800, and the sidecar keeps serving', async () => {
    const { m } = manager();
    const source = new stub.CancellationTokenSource();
    const started = Date.now();
    const turn = m.request('chat/send', send('t-hang', directed('wait', { hang: 'midStream' })), source.token);
    setTimeout(() => source.cancel(), 500);
    await assert.rejects(turn, (e: unknown) => toBridgeError(e).kind === 'cancelled');
    assert.ok(Date.now() - started < 5000, `${Date.now() - started} ms`);
    const ok = await m.request('chat/send', send('t-after', directed('x', { answer: 'still here' })));
    assert.ok(ok.turnId === 't-after');
  });

  it('fails in-flight turns when the sidecar dies, and restarts it', async () => {
    const { m, log } = manager();
    await m.request('models/list', {});
    const pid = m.pid;
    const turn = m.request('chat/send', send('t-crash', directed('wait', { hang: 'midStream' })));
    await new Promise((r) => setTimeout(r, 300));
    process.kill(pid!, 'SIGKILL');
    await assert.rejects(turn, (e: unknown) => toBridgeError(e).kind === 'sidecarCrashed');
    await until('a new sidecar', () => m.running && m.pid !== pid);
    await m.request('models/list', {});
    assert.ok(
      log.lines.some((l) => l.includes('exited') || l.includes('killed')),
      log.lines.join('\n'),
    );
  });

  it('gives up after too many crashes, until restarted by hand', async () => {
    const { m, gaveUp } = manager({ crashLimit: 2 });
    for (let i = 0; i < 2; i++) {
      await m.request('models/list', {});
      const pid = m.pid!;
      process.kill(pid, 'SIGKILL');
      await until('the exit to be seen', () => m.pid !== pid);
    }
    await until('giving up', () => gaveUp.length === 1);
    await assert.rejects(m.request('models/list', {}), (e: BridgeError) => e.kind === 'sidecarGaveUp');
    await m.restart('test', true);
    assert.ok(m.running);
    await m.request('models/list', {});
  });

  it('stops cleanly with shutdown + exit', async () => {
    const { m } = manager();
    await m.request('models/list', {});
    const pid = m.pid;
    assert.ok(alive(pid));
    await m.dispose();
    await until('the process to exit', () => !alive(pid));
    await assert.rejects(m.request('models/list', {}));
  });

  it('restarts with fresh settings when asked', async () => {
    const { m } = manager();
    await m.request('models/list', {});
    const pid = m.pid;
    await m.restart('settings changed');
    assert.ok(m.running);
    assert.notEqual(m.pid, pid);
    await until('the old process to exit', () => !alive(pid));
  });

  it('reports a missing binary as sidecarNotFound, without counting crashes', async () => {
    const { m, gaveUp } = manager({ crashLimit: 1 }, path.join(dir, 'no-such-binary'));
    for (let i = 0; i < 3; i++) {
      await assert.rejects(m.request('models/list', {}), (e: BridgeError) => e.kind === 'sidecarNotFound');
    }
    assert.equal(gaveUp.length, 0);
  });
});

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type * as vscode from 'vscode';
import { ResponseError } from 'vscode-jsonrpc/node';
import type { CancellationLike } from '../src/client';
import type { Bridge } from '../src/sidecar-manager';
import { BridgeError, NOTICES } from '../src/errors';
import { ModelCatalog } from '../src/models';
import type {
  ChatDelta,
  ChatSendParams,
  ChatSendResult,
  DeltaBody,
  InitializeResult,
  Method,
  ModelInfo,
  Requests,
} from '../src/protocol';
import { CursorChatProvider, usagePayload, type ProviderDeps } from '../src/provider';
import { DEFAULTS, type Settings } from '../src/settings';
import { TokenCounter } from '../src/tokens';
import { loadRequest, memoryLog } from './helpers';
import * as stub from './vscode-stub';

interface Call {
  method: Method;
  params: unknown;
  token?: CancellationLike;
}

/** A sidecar stand-in: each chat/send runs `turn`, which may emit deltas and resolve or throw. */
class FakeBridge implements Bridge {
  calls: Call[] = [];
  private handlers = new Map<string, (d: ChatDelta) => void>();
  turn: (
    params: ChatSendParams,
    emit: (b: DeltaBody) => void,
    token?: CancellationLike,
  ) => Promise<Partial<ChatSendResult>> = async () => ({});
  models: () => Promise<ModelInfo[]> = async () => [];
  /** What `initialize` said; the default is a sidecar from before client-owned tools. */
  caps: () => Promise<InitializeResult['capabilities']> = async () => ({
    deltaKinds: [],
    cancel: true,
    sessions: true,
    cli: { found: true },
  });
  capabilityCalls = 0;

  capabilities(): Promise<InitializeResult['capabilities']> {
    this.capabilityCalls++;
    return this.caps();
  }

  async request<M extends Method>(
    method: M,
    params: Requests[M]['params'],
    token?: CancellationLike,
  ): Promise<Requests[M]['result']> {
    this.calls.push({ method, params, token });
    if (method === 'models/list') return { models: await this.models() } as Requests[M]['result'];
    if (method !== 'chat/send') throw new Error(`unexpected ${method}`);
    const p = params as ChatSendParams;
    let seq = 0;
    const emit = (b: DeltaBody) => this.handlers.get(p.turnId)?.({ turnId: p.turnId, seq: ++seq, ...b } as ChatDelta);
    const result = await this.turn(p, emit, token);
    return {
      turnId: p.turnId,
      sessionId: 'cb-fake',
      resumed: false,
      stopReason: 'end',
      durationMs: 5,
      ...result,
    } as Requests[M]['result'];
  }

  onDelta(turnId: string, handler: (d: ChatDelta) => void) {
    this.handlers.set(turnId, handler);
    return { dispose: () => this.handlers.delete(turnId) };
  }

  get subscribers(): number {
    return this.handlers.size;
  }
}

function setup(over: Omit<Partial<ProviderDeps>, 'settings'> & { settings?: Partial<Settings> } = {}) {
  const bridge = new FakeBridge();
  const changed = new stub.EventEmitter<void>();
  const log = memoryLog();
  const catalog = new ModelCatalog(
    async (refresh) => (await bridge.request('models/list', { refresh })).models,
    () => changed.fire(),
  );
  const { settings, ...rest } = over;
  const provider = new CursorChatProvider({
    bridge,
    catalog,
    onDidChangeModels: changed.event,
    tokens: new TokenCounter(),
    settings: () => ({ ...DEFAULTS, ...settings }),
    trusted: () => true,
    workspace: () => undefined,
    log,
    thinkingPart: () => stub.LanguageModelThinkingPart,
    dataPart: () => stub.LanguageModelDataPart,
    newTurnId: () => 'turn-1',
    ...rest,
  });
  return { bridge, provider, log, catalog };
}

function collector() {
  const parts: unknown[] = [];
  return {
    parts,
    progress: { report: (p: unknown) => void parts.push(p) } as vscode.Progress<vscode.LanguageModelResponsePart>,
    text: () => parts.map((p) => (p instanceof stub.LanguageModelTextPart ? p.value : '')).join(''),
    data: (mime: string) =>
      parts.filter(
        (p): p is stub.LanguageModelDataPart => p instanceof stub.LanguageModelDataPart && p.mimeType === mime,
      ),
  };
}

const decode = (d: Uint8Array) => new TextDecoder().decode(d);

async function respond(
  provider: CursorChatProvider,
  fixture: string,
  token = new stub.CancellationTokenSource().token,
) {
  const r = loadRequest(fixture);
  const out = collector();
  await provider.provideLanguageModelChatResponse(
    r.model,
    r.messages,
    r.options,
    out.progress,
    token as vscode.CancellationToken,
  );
  return { ...out, request: r };
}

describe('provideLanguageModelChatResponse', () => {
  it('streams the answer, then reports usage and our marker', async () => {
    const { bridge, provider } = setup();
    bridge.turn = async (_p, emit) => {
      emit({ kind: 'session', sessionId: 'cb-77', resumed: false, replayed: false });
      emit({ kind: 'thinking', text: 'hmm' });
      emit({ kind: 'text', text: 'Hello' });
      emit({ kind: 'text', text: ' world' });
      return {
        sessionId: 'cb-77',
        usage: { inputTokens: 10, outputTokens: 5, cacheReadTokens: 100, cacheWriteTokens: 1 },
      };
    };
    const out = await respond(provider, 'agent-first-turn');
    assert.equal(out.text(), 'Hello world');
    assert.ok(out.parts.some((p) => p instanceof stub.LanguageModelThinkingPart));
    const [marker] = out.data('stateful_marker');
    assert.equal(decode(marker.data), 'sonnet-5\\cursor-bridge:v1:cb-77');
    assert.equal(out.parts.at(-1), marker, 'the marker comes last');
    const [usage] = out.data('usage');
    assert.deepEqual(
      JSON.parse(decode(usage.data)),
      usagePayload({ inputTokens: 10, outputTokens: 5, cacheReadTokens: 100, cacheWriteTokens: 1 }),
    );
    assert.deepEqual(JSON.parse(decode(usage.data)), {
      prompt_tokens: 111,
      completion_tokens: 5,
      total_tokens: 116,
      prompt_tokens_details: { cached_tokens: 100 },
    });
    assert.equal(bridge.subscribers, 0, 'delta subscription released');
  });

  it('reports reasoning tokens in the usage part where the agent counted them', async () => {
    const { bridge, provider } = setup();
    const usage = { inputTokens: 10, outputTokens: 50, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 40 };
    bridge.turn = async (_p, emit) => (emit({ kind: 'text', text: 'ok' }), { sessionId: 'cb-8', usage });
    const out = await respond(provider, 'harness-marker-only');
    const payload = JSON.parse(decode(out.data('usage')[0].data)) as Record<string, unknown>;
    assert.deepEqual(payload.completion_tokens_details, { reasoning_tokens: 40 });
    assert.equal(payload.completion_tokens, 50);
  });

  it('sends what planTurn computed: conversation id, session id from the marker, mode', async () => {
    const { bridge, provider } = setup();
    await respond(provider, 'agent-second-turn');
    const params = bridge.calls[0].params as ChatSendParams;
    assert.equal(params.turnId, 'turn-1');
    assert.equal(params.conversationId, 'c2d74faf');
    assert.equal(params.sessionId, 'cb-4f1e0c2a9b7d3e15');
    assert.equal(params.mode, 'agent');
    assert.equal(params.messages.at(-1)?.role, 'user');
  });

  // VS Code's Copilot harness (docs/vscode-provider.md §16): no conversation id, the marker first.
  for (const fixture of ['harness-marker-only', 'harness-marker-trimmed', 'harness-tool-results-only']) {
    it(`the Copilot harness's ${fixture.replace('harness-', '')} follow-up names the marker's session and gets it back`, async () => {
      const { bridge, provider } = setup();
      bridge.caps = async () => ({
        deltaKinds: [],
        cancel: true,
        sessions: true,
        cli: { found: true },
        clientTools: 1,
      });
      bridge.turn = async (p, emit) => {
        emit({ kind: 'session', sessionId: p.sessionId ?? 'cb-new', resumed: true, replayed: false });
        emit({ kind: 'text', text: 'Continuing.' });
        return { sessionId: p.sessionId ?? 'cb-new', resumed: true };
      };
      const out = await respond(provider, fixture);
      const [params] = bridge.calls.filter((c) => c.method === 'chat/send').map((c) => c.params as ChatSendParams);
      assert.equal(params.sessionId, 'cb-4f1e0c2a9b7d3e15');
      assert.ok(!('conversationId' in params) && !params.utility, 'a main request without a conversation id');
      assert.deepEqual(params.messages, out.request.expectClientTools?.messages ?? out.request.expect.messages);
      assert.equal(params.messages[0].role, 'system', 'the instructions stay system instructions');
      assert.equal(
        decode(out.data('stateful_marker')[0].data),
        'gpt-5.5\\cursor-bridge:v1:cb-4f1e0c2a9b7d3e15',
        'the same session again',
      );
    });
  }

  it('a reply with nothing visible (only reasoning) still answers in text, and keeps its session', async () => {
    const { bridge, provider } = setup();
    bridge.turn = async (_p, emit) => {
      emit({ kind: 'session', sessionId: 'cb-3', resumed: false, replayed: false });
      emit({ kind: 'thinking', text: 'Hmm.' });
      emit({ kind: 'thinkingDone' });
      throw new ResponseError(-32000, 'The model returned an empty answer', { kind: 'emptyResponse' });
    };
    const out = await respond(provider, 'harness-marker-only');
    assert.match(out.text(), /finished without a visible answer/);
    assert.equal(decode(out.data('stateful_marker')[0].data), 'gpt-5.5\\cursor-bridge:v1:cb-3');
  });

  it('runs utility requests on the utility model and reports no marker', async () => {
    const { bridge, provider } = setup({ settings: { utilityModel: 'composer-2.5-fast' } });
    bridge.turn = async (_p, emit) => (emit({ kind: 'text', text: 'Cart discount bug' }), { sessionId: null });
    const out = await respond(provider, 'utility-title');
    const params = bridge.calls[0].params as ChatSendParams;
    assert.equal(params.utility, true);
    assert.equal(params.model, 'composer-2.5-fast');
    assert.equal(out.text(), 'Cart discount bug');
    assert.equal(out.data('stateful_marker').length, 0);
  });

  it('reports no data parts on hosts without LanguageModelDataPart (before 1.106)', async () => {
    const { provider } = setup({ dataPart: () => undefined });
    const out = await respond(provider, 'agent-first-turn');
    assert.equal(out.parts.filter((p) => !(p instanceof stub.LanguageModelTextPart)).length, 0);
  });

  it('hands the token to the request and returns as soon as it is cancelled', async () => {
    const { bridge, provider } = setup();
    const source = new stub.CancellationTokenSource();
    let emitLate: (() => void) | undefined;
    bridge.turn = (_p, emit, token) =>
      new Promise(() => {
        emit({ kind: 'text', text: 'partial' });
        emitLate = () => emit({ kind: 'text', text: ' late' });
        assert.equal(token, source.token, 'the same token reaches vscode-jsonrpc (it sends $/cancelRequest)');
        setTimeout(() => source.cancel(), 5);
        // never settles: the sidecar's -32800 answer is not waited for
      });
    const started = Date.now();
    const out = await respond(provider, 'agent-first-turn', source.token);
    assert.ok(Date.now() - started < 1000);
    emitLate?.();
    assert.equal(out.text(), 'partial', 'nothing is reported after the cancel');
    assert.equal(out.data('stateful_marker').length, 0);
    assert.equal(bridge.subscribers, 0);
  });

  it('does nothing for an already cancelled request', async () => {
    const { bridge, provider } = setup();
    const source = new stub.CancellationTokenSource();
    source.cancel();
    await respond(provider, 'agent-first-turn', source.token);
    assert.equal(bridge.calls.length, 0);
  });

  it('explains set-up problems as the answer, keeping text already streamed and the session', async () => {
    const { bridge, provider, log } = setup();
    bridge.turn = async (_p, emit) => {
      emit({ kind: 'session', sessionId: 'cb-5', resumed: false, replayed: false });
      emit({ kind: 'text', text: 'Partial' });
      throw new BridgeError(
        'authRequired',
        'The Cursor CLI is not logged in',
        'Run `agent login`',
        'Error: Authentication required',
      );
    };
    const out = await respond(provider, 'agent-first-turn');
    assert.match(out.text(), /^Partial\n\n\*\*The Cursor CLI is not logged in/);
    assert.equal(decode(out.data('stateful_marker')[0].data), 'sonnet-5\\cursor-bridge:v1:cb-5');
    assert.ok(
      log.lines.some((l) => l.includes('authRequired') && l.includes('Authentication required')),
      'the detail goes to the log',
    );
  });

  it('throws a clean one-line error for transient problems', async () => {
    const { bridge, provider } = setup();
    bridge.turn = async () => {
      throw new BridgeError('rateLimited', 'HTTP 429 at /home/dev/x');
    };
    await assert.rejects(respond(provider, 'agent-first-turn'), (e: Error) => {
      assert.equal(e.stack, '');
      assert.match(e.message, /rate-limiting/);
      assert.ok(!e.message.includes('/home/dev'));
      return true;
    });
  });

  it('returns quietly when the sidecar reports a cancel the token did not see', async () => {
    const { bridge, provider } = setup();
    bridge.turn = async () => {
      throw new BridgeError('cancelled', 'cancelled');
    };
    const out = await respond(provider, 'agent-first-turn');
    assert.equal(out.parts.length, 0);
  });

  it('says once, before the answer, that attached images were not sent, and sends the text', async () => {
    const { bridge, provider } = setup();
    bridge.turn = async (_p, emit) => (emit({ kind: 'text', text: 'A cat.' }), {});
    const r = loadRequest('ask-mode');
    const png = new stub.LanguageModelDataPart(new Uint8Array([0x89, 0x50]), 'image/png');
    const jpeg = { mimeType: 'image/jpeg', data: new Uint8Array([0xff, 0xd8]) };
    (r.messages.at(-1)!.content as unknown[]).push(png, jpeg);
    const out = collector();
    const token = new stub.CancellationTokenSource().token as vscode.CancellationToken;
    await provider.provideLanguageModelChatResponse(r.model, r.messages, r.options, out.progress, token);
    const text = out.text();
    assert.equal(text, `> ℹ️ ${NOTICES.imagesNotSent(2)}\n\nA cat.`);
    assert.equal(text.split('not sent to the model').length, 2, 'once per response');
    assert.equal(
      NOTICES.imagesNotSent(1),
      "The attached image was not sent to the model: Cursor Bridge sends images only to models that take them (Cursor's ACP mode; print mode sends text only), as PNG, JPEG, GIF or WebP.",
    );
    const params = bridge.calls[0].params as ChatSendParams;
    assert.match(params.messages.at(-1)?.text ?? '', /How is the total computed\?/);
    assert.equal(params.images, undefined, 'a model without imageInput is sent no images');
  });

  it('sends the new request’s images to a model that takes them, and points out one it cannot read', async () => {
    const { bridge, provider } = setup();
    bridge.turn = async (_p, emit) => (emit({ kind: 'text', text: 'A cat.' }), {});
    const r = loadRequest('ask-mode');
    const png = new stub.LanguageModelDataPart(new Uint8Array([0x89, 0x50, 0x4e, 0x47]), 'image/png');
    const bmp = new stub.LanguageModelDataPart(new Uint8Array([0x42, 0x4d]), 'image/bmp');
    (r.messages.at(-1)!.content as unknown[]).push(png, bmp);
    const model = { ...r.model, capabilities: { toolCalling: true, imageInput: true } };
    const out = collector();
    const token = new stub.CancellationTokenSource().token as vscode.CancellationToken;
    await provider.provideLanguageModelChatResponse(model, r.messages, r.options, out.progress, token);
    const params = bridge.calls[0].params as ChatSendParams;
    assert.deepEqual(params.images, [{ mimeType: 'image/png', data: 'iVBORw==' }]);
    assert.equal(out.text(), `> ℹ️ ${NOTICES.imagesNotSent(1)}\n\nA cat.`);
  });

  it('says nothing about images when there are none, or in utility requests', async () => {
    const { bridge, provider } = setup();
    bridge.turn = async (_p, emit) => (emit({ kind: 'text', text: 'Title' }), { sessionId: null });
    assert.doesNotMatch((await respond(provider, 'ask-mode')).text(), /text only/);
    const r = loadRequest('utility-title');
    (r.messages.at(-1)!.content as unknown[]).push(new stub.LanguageModelDataPart(new Uint8Array([1]), 'image/png'));
    const out = collector();
    await provider.provideLanguageModelChatResponse(
      r.model,
      r.messages,
      r.options,
      out.progress,
      new stub.CancellationTokenSource().token as vscode.CancellationToken,
    );
    assert.equal(out.text(), 'Title');
  });

  it('runs the turn in the folder the extension chose', async () => {
    const { bridge, provider } = setup({ workspace: () => '/home/dev/web' });
    await respond(provider, 'ask-mode');
    assert.equal((bridge.calls[0].params as ChatSendParams).workspace, '/home/dev/web');
  });

  it('keeps a conversation in the folder it began in when the active editor moves', async () => {
    const folders = ['/home/dev/web', '/home/dev/api'];
    const { bridge, provider } = setup({ workspace: () => folders.shift() });
    await respond(provider, 'agent-first-turn');
    await respond(provider, 'agent-second-turn');
    const used = bridge.calls.map((c) => (c.params as ChatSendParams).workspace);
    assert.deepEqual(used, ['/home/dev/web', '/home/dev/web']);
  });

  it('never explains in Markdown for utility requests (it would become the title)', async () => {
    const { bridge, provider } = setup();
    bridge.turn = async () => {
      throw new BridgeError('authRequired', 'not logged in');
    };
    await assert.rejects(respond(provider, 'utility-title'));
  });
});

describe('client-owned tools (cursorBridge.tools)', () => {
  const withClientTools = async (): Promise<InitializeResult['capabilities']> => ({
    deltaKinds: [],
    cancel: true,
    sessions: true,
    cli: { found: true },
    clientTools: 1,
  });
  const sent = (bridge: FakeBridge) =>
    bridge.calls.filter((c) => c.method === 'chat/send').map((c) => c.params as ChatSendParams);

  it('copilot + a sidecar with clientTools: sends the tools, reports the toolCall as a ToolCallPart, and ends the response', async () => {
    const phases: string[] = [];
    const { bridge, provider, log } = setup({ onTurn: (p) => phases.push(p) });
    bridge.caps = withClientTools;
    const input = { filePath: '/home/dev/shop/NOTES.md', content: 'hi\n' };
    bridge.turn = async (_p, emit) => {
      emit({ kind: 'session', sessionId: 'cb-9', resumed: false, replayed: false });
      emit({ kind: 'text', text: 'Creating it.' });
      emit({ kind: 'toolCall', callId: 'call_5f0c9a1b2c3d4e5f60718293', name: 'create_file', input });
      return { sessionId: 'cb-9', stopReason: 'toolCalls' };
    };
    const out = await respond(provider, 'agent-first-turn');
    const [params] = sent(bridge);
    assert.deepEqual(
      params.tools?.map((t) => t.name),
      out.request.options.tools?.map((t) => t.name),
    );
    assert.ok(params.tools?.some((t) => t.name === 'create_file'));
    assert.deepEqual(params.tools?.[0], {
      name: 'create_directory',
      description: 'the create_directory tool',
      inputSchema: {},
    });
    assert.equal(params.toolChoice, 'auto');
    assert.equal(params.parallelToolCalls, true);
    assert.equal(params.messages[0].role, 'system', 'Copilot’s system prompt goes along');
    const calls = out.parts.filter(
      (p): p is stub.LanguageModelToolCallPart => p instanceof stub.LanguageModelToolCallPart,
    );
    assert.deepEqual(
      calls.map((c) => [c.callId, c.name, c.input]),
      [['call_5f0c9a1b2c3d4e5f60718293', 'create_file', input]],
    );
    assert.equal(out.text(), 'Creating it.');
    assert.equal(
      decode(out.data('stateful_marker')[0].data),
      'sonnet-5\\cursor-bridge:v1:cb-9',
      'the session survives the tool round',
    );
    assert.deepEqual(phases, ['started'], 'not answered yet: VS Code runs the tool and calls again');
    assert.ok(log.lines.some((l) => /client tools \(auto\)/.test(l)));
    assert.ok(log.lines.some((l) => /waiting for 1 tool result/.test(l)));
  });

  it('sends the results of the round back as toolResults on the next call', async () => {
    const { bridge, provider } = setup();
    bridge.caps = withClientTools;
    const out = await respond(provider, 'client-tools-round');
    const [params] = sent(bridge);
    assert.deepEqual(params.messages, out.request.expectClientTools?.messages);
    assert.equal(params.sessionId, 'cb-4f1e0c2a9b7d3e15');
  });

  it('cursor: sends no tools and does not even ask the sidecar', async () => {
    const { bridge, provider } = setup({ settings: { tools: 'cursor' } });
    bridge.caps = withClientTools;
    const out = await respond(provider, 'client-tools-round');
    const [params] = sent(bridge);
    for (const key of ['tools', 'toolChoice', 'parallelToolCalls'] as const) assert.ok(!(key in params), key);
    assert.deepEqual(params.messages, out.request.expect.messages, 'calls and results as lines, as before');
    assert.equal(bridge.capabilityCalls, 0);
  });

  it('copilot without the capability (an older sidecar): as before, and the log says why', async () => {
    const { bridge, provider, log } = setup();
    const out = await respond(provider, 'client-tools-round');
    const [params] = sent(bridge);
    assert.ok(!('tools' in params) && !('toolChoice' in params) && !('parallelToolCalls' in params));
    assert.deepEqual(params.messages, out.request.expect.messages);
    assert.equal(bridge.capabilityCalls, 1);
    assert.ok(log.lines.some((l) => l.includes("Cursor's own tools (this sidecar has no client tools)")));
  });

  it('asks nothing for requests without tools (utility, vscode.lm consumers)', async () => {
    const { bridge, provider } = setup();
    bridge.caps = withClientTools;
    await respond(provider, 'utility-title');
    await respond(provider, 'consumer-plain-request');
    assert.equal(bridge.capabilityCalls, 0);
    assert.ok(sent(bridge).every((p) => !('tools' in p)));
  });

  it('a sidecar that cannot start fails the turn as chat/send would, without sending it', async () => {
    const { bridge, provider } = setup();
    bridge.caps = async () => {
      throw new BridgeError('cliNotFound', 'The Cursor CLI was not found');
    };
    const out = await respond(provider, 'agent-first-turn');
    assert.match(out.text(), /^\*\*Cursor Bridge could not find the Cursor CLI/, 'explained as the answer');
    assert.equal(sent(bridge).length, 0);
    bridge.caps = async () => {
      throw new BridgeError('rateLimited', 'HTTP 429');
    };
    await assert.rejects(respond(provider, 'agent-first-turn'), /rate-limiting/);
  });

  it('returns at once, sending nothing, when cancelled while the sidecar starts', async () => {
    const { bridge, provider } = setup();
    const source = new stub.CancellationTokenSource();
    bridge.caps = () => new Promise(() => setTimeout(() => source.cancel(), 5));
    const out = await respond(provider, 'agent-first-turn', source.token);
    assert.equal(out.parts.length, 0);
    assert.equal(sent(bridge).length, 0);
  });
});

describe('provideLanguageModelChatInformation', () => {
  const models: ModelInfo[] = [
    {
      id: 'auto',
      name: 'Auto',
      family: 'auto',
      maxInputTokens: 200_000,
      maxOutputTokens: 32_768,
      capabilities: { thinking: false, toolCalling: true, imageInput: false },
      isDefault: true,
    },
  ];

  it('answers silent calls from the cache without waiting, loading in the background', async () => {
    const { bridge, provider } = setup();
    let release: (() => void) | undefined;
    bridge.models = () => new Promise((r) => (release = () => r(models)));
    let fired = 0;
    provider.onDidChangeLanguageModelChatInformation(() => fired++);
    const token = new stub.CancellationTokenSource().token as vscode.CancellationToken;
    assert.deepEqual(await provider.provideLanguageModelChatInformation({ silent: true }, token), []);
    release?.();
    await new Promise((r) => setImmediate(r));
    assert.equal(fired, 1);
    const infos = await provider.provideLanguageModelChatInformation({ silent: true }, token);
    assert.deepEqual(
      infos.map((i) => i.id),
      ['auto'],
    );
  });

  it('waits for the list when not silent, and returns what it has on failure', async () => {
    const { bridge, provider } = setup();
    bridge.models = async () => models;
    const token = new stub.CancellationTokenSource().token as vscode.CancellationToken;
    assert.equal((await provider.provideLanguageModelChatInformation({ silent: false }, token)).length, 1);
    bridge.models = async () => {
      throw new BridgeError('authRequired', 'x');
    };
    const { provider: p2, bridge: b2 } = setup();
    b2.models = bridge.models;
    assert.deepEqual(await p2.provideLanguageModelChatInformation({ silent: false }, token), []);
  });
});

describe('provideTokenCount', () => {
  it('counts locally (no request) for strings and messages', async () => {
    const { bridge, provider } = setup();
    const r = loadRequest('agent-second-turn');
    const token = new stub.CancellationTokenSource().token as vscode.CancellationToken;
    assert.ok((await provider.provideTokenCount(r.model, 'hello world', token)) >= 2);
    assert.ok((await provider.provideTokenCount(r.model, r.messages[0], token)) > 100);
    assert.equal(bridge.calls.length, 0);
  });
});

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  classifyPart,
  convertMessages,
  imageMimeOf,
  imageOf,
  isUtilityRequest,
  renderToolCall,
  renderToolResult,
  toolChoiceOf,
  toolDefinitionsOf,
  toolResultText,
} from '../src/convert';
import { planTurn } from '../src/provider';
import { loadRequest, requestFixtures } from './helpers';
import * as stub from './vscode-stub';

describe('requests shaped like the Chat view (fixtures/requests)', () => {
  const names = requestFixtures();
  it('has fixtures', () => assert.ok(names.length >= 10, names.join(', ')));
  for (const name of names) {
    it(name, () => {
      const r = loadRequest(name);
      const plan = planTurn(r.model, r.messages, r.options, { mode: 'auto', utilityModel: '' }, true, 't-1');
      assert.equal(plan.utility, r.expect.utility, 'utility');
      assert.equal(plan.params.mode, r.expect.mode, `mode (${plan.mode.reason})`);
      assert.equal(plan.params.conversationId, r.expect.conversationId ?? undefined, 'conversationId');
      assert.equal(plan.params.sessionId, r.expect.sessionId ?? undefined, 'sessionId');
      assert.equal(plan.params.utility, r.expect.utility ? true : undefined, 'utility flag on the wire');
      assert.equal(plan.params.model, r.model.id);
      assert.deepEqual(plan.params.messages, r.expect.messages);
    });
  }
});

describe('the same requests with client-owned tools (planTurn with the sidecar’s clientTools)', () => {
  const names = requestFixtures();
  const withClientTools = names.filter((n) => loadRequest(n).expectClientTools);
  it('has a client-tools fixture', () => assert.ok(withClientTools.length >= 1));
  for (const name of names) {
    it(name, () => {
      const r = loadRequest(name);
      const plain = planTurn(r.model, r.messages, r.options, { mode: 'auto', utilityModel: '' }, true, 't-1');
      const plan = planTurn(
        r.model,
        r.messages,
        r.options,
        { mode: 'auto', utilityModel: '' },
        true,
        't-1',
        undefined,
        true,
      );
      const offered = (r.options.tools?.length ?? 0) > 0 && !r.expect.utility;
      assert.equal(plan.clientTools, offered, 'client tools exactly when the request offers tools');
      // What does not depend on tools stays as it is.
      assert.equal(plan.params.mode, r.expect.mode);
      assert.equal(plan.params.sessionId, r.expect.sessionId ?? undefined);
      assert.equal(plan.params.conversationId, r.expect.conversationId ?? undefined);
      if (!offered) {
        assert.deepEqual(plan.params, plain.params, 'no tools offered: the request is sent as without client tools');
        return;
      }
      assert.deepEqual(
        plan.params.tools?.map((t) => t.name),
        r.options.tools?.map((t) => t.name),
      );
      assert.equal(plan.params.parallelToolCalls, true);
      assert.equal(plan.params.toolChoice, r.expectClientTools?.toolChoice ?? 'auto');
      // Copilot's system prompt explains its tools: it stays, first, as sent.
      if (r.messages.some((m) => (m.role as number) === 3)) {
        assert.equal(plan.params.messages[0].role, 'system');
        assert.deepEqual(plan.params.messages[0], plain.params.messages[0]);
      }
      if (r.expectClientTools) assert.deepEqual(plan.params.messages, r.expectClientTools.messages);
      else assert.ok(plan.params.messages.every((m) => !m.toolCalls && !m.toolResults));
    });
  }
  it('keeps the system prompt in tools mode (the sidecar’s prompt explains nothing of Copilot’s tools)', () => {
    const r = loadRequest('client-tools-round');
    const plan = planTurn(
      r.model,
      r.messages,
      r.options,
      { mode: 'auto', utilityModel: '' },
      true,
      't',
      undefined,
      true,
    );
    assert.equal(plan.params.messages[0].role, 'system');
    assert.match(plan.params.messages[0].text, /<toolUseInstructions>/);
  });
  it('sends no tools when the sidecar has none, even though the request offers them', () => {
    const r = loadRequest('client-tools-round');
    const plan = planTurn(r.model, r.messages, r.options, { mode: 'auto', utilityModel: '' }, true, 't');
    assert.equal(plan.clientTools, false);
    for (const key of ['tools', 'toolChoice', 'parallelToolCalls'] as const) assert.ok(!(key in plan.params), key);
    assert.ok(plan.params.messages.every((m) => !('toolCalls' in m) && !('toolResults' in m)));
  });
});

describe('tool definitions and choice', () => {
  it('sends name, description and schema; a tool without a schema takes an empty object', () => {
    const schema = { type: 'object', properties: { filePath: { type: 'string' } }, required: ['filePath'] };
    assert.deepEqual(
      toolDefinitionsOf({
        tools: [
          { name: 'create_file', description: 'Create a file', inputSchema: schema },
          { name: 'get_changed_files', description: 'Changed files' },
        ],
      }),
      [
        { name: 'create_file', description: 'Create a file', inputSchema: schema },
        { name: 'get_changed_files', description: 'Changed files', inputSchema: { type: 'object', properties: {} } },
      ],
    );
  });
  it('maps toolMode Required to "required", Auto and none to "auto"', () => {
    assert.equal(toolChoiceOf({ toolMode: stub.LanguageModelChatToolMode.Required }), 'required');
    assert.equal(toolChoiceOf({ toolMode: stub.LanguageModelChatToolMode.Auto }), 'auto');
    assert.equal(toolChoiceOf({}), 'auto');
    const r = loadRequest('client-tools-round');
    const options = {
      ...r.options,
      toolMode: stub.LanguageModelChatToolMode.Required as number as typeof r.options.toolMode,
    };
    assert.equal(
      planTurn(r.model, r.messages, options, { mode: 'auto', utilityModel: '' }, true, 't', undefined, true).params
        .toolChoice,
      'required',
    );
  });
});

describe('tool results with client-owned tools', () => {
  const user = (...content: unknown[]) => ({ role: 1, name: '', content }) as never;
  const assistant = (...content: unknown[]) => ({ role: 2, name: undefined, content }) as never;
  const convert = (...messages: never[]) => convertMessages(messages, { clientTools: true }).messages;

  it('reads all three result shapes alike, isError included', () => {
    const text = [new stub.LanguageModelTextPart('boom')];
    const shapes = [
      new stub.LanguageModelToolResultPart('c', text),
      Object.assign(new stub.LanguageModelToolResultPart('c', text), { isError: true }),
      new stub.LanguageModelToolResultPart2('c', text, true),
      { callId: 'c', content: text, isError: true },
      { callId: 'c', content: text },
    ];
    assert.deepEqual(
      shapes.map((s) => convert(user(s))[0].toolResults),
      [false, true, true, true, false].map((isError) => [{ callId: 'c', content: 'boom', isError }]),
    );
  });
  it('concatenates text parts and describes the rest briefly, skipping bookkeeping parts', () => {
    const enc = (t: string) => new TextEncoder().encode(t);
    const content = [
      new stub.LanguageModelTextPart('line 1\n'),
      { value: 'line 2\n' },
      new stub.LanguageModelDataPart(new Uint8Array(1234), 'image/png'),
      stub.LanguageModelDataPart.json({ ok: true }, 'application/json'),
      new stub.LanguageModelDataPart(enc('ephemeral'), 'cache_control'),
      new stub.LanguageModelDataPart(enc('\n'), 'text/plain'),
      new stub.LanguageModelDataPart(new Uint8Array(3), 'application/octet-stream'),
      // LanguageModelPromptTsxPart: a rendered prompt-tsx tree.
      {
        value: {
          node: {
            type: 1,
            children: [
              { type: 2, text: 'from ' },
              { type: 1, children: [{ type: 2, text: 'tsx' }] },
            ],
          },
        },
      },
      { value: { node: { type: 1, children: [] } } },
    ];
    assert.equal(
      toolResultText(content),
      'line 1\nline 2\n[image image/png, 1234 bytes, not shown]{"ok":true}\n[data application/octet-stream, 3 bytes, not shown]from tsx[a prompt-tsx part without text]',
    );
    assert.equal(toolResultText([]), '');
  });
  it('keeps a message that has only tool calls or results, with empty text; drops thinking', () => {
    const out = convert(
      assistant(
        new stub.LanguageModelThinkingPart('hmm', 't1'),
        new stub.LanguageModelToolCallPart('call_a', 'list_dir', { path: '/w' }),
      ),
      user(new stub.LanguageModelToolResultPart('call_a', [new stub.LanguageModelTextPart('a.ts')])),
    );
    assert.deepEqual(out, [
      { role: 'assistant', text: '', toolCalls: [{ callId: 'call_a', name: 'list_dir', input: { path: '/w' } }] },
      { role: 'user', text: '', toolResults: [{ callId: 'call_a', content: 'a.ts', isError: false }] },
    ]);
  });
  it('keeps text and tool calls of one message apart, text parts joined', () => {
    const out = convert(
      assistant(
        new stub.LanguageModelTextPart('Creating '),
        new stub.LanguageModelToolCallPart('call_a', 'create_file', { filePath: '/w/a' }),
        new stub.LanguageModelTextPart('it.'),
      ),
    );
    assert.deepEqual(out, [
      {
        role: 'assistant',
        text: 'Creating it.',
        toolCalls: [{ callId: 'call_a', name: 'create_file', input: { filePath: '/w/a' } }],
      },
    ]);
  });
  it('leaves calls and results in the wrong role as lines (never seen; nothing is lost)', () => {
    const out = convert(
      user(new stub.LanguageModelToolCallPart('call_a', 'list_dir', {})),
      assistant(new stub.LanguageModelToolResultPart('call_a', [new stub.LanguageModelTextPart('x')])),
    );
    assert.deepEqual(out, [
      { role: 'user', text: '(tool call: list_dir)' },
      { role: 'assistant', text: '(tool result of list_dir: x)' },
    ]);
  });
});

describe('planTurn', () => {
  it('sends utility requests to cursorBridge.utilityModel, without session fields', () => {
    const r = loadRequest('utility-title');
    const plan = planTurn(
      r.model,
      r.messages,
      r.options,
      { mode: 'agent', utilityModel: 'composer-2.5-fast' },
      true,
      't',
    );
    assert.equal(plan.params.model, 'composer-2.5-fast');
    assert.equal(plan.params.mode, 'ask', 'the mode setting does not apply to utility requests');
    assert.equal(plan.params.utility, true);
    assert.equal(plan.params.conversationId, undefined);
    assert.equal(plan.params.sessionId, undefined);
  });
  it('uses the selected model for utility requests when no utility model is set', () => {
    const r = loadRequest('utility-progress');
    assert.equal(
      planTurn(r.model, r.messages, r.options, { mode: 'auto', utilityModel: '' }, true, 't').params.model,
      'sonnet-5',
    );
  });
  it('ignores the utility model for main requests', () => {
    const r = loadRequest('agent-first-turn');
    assert.equal(
      planTurn(r.model, r.messages, r.options, { mode: 'auto', utilityModel: 'fast' }, true, 't').params.model,
      'sonnet-5',
    );
  });
  it('asks (never agent) in an untrusted workspace, whatever the request or setting says', () => {
    const r = loadRequest('agent-second-turn');
    const plan = planTurn(r.model, r.messages, r.options, { mode: 'agent', utilityModel: '' }, false, 't');
    assert.equal(plan.params.mode, 'ask');
    assert.equal(plan.params.sessionId, 'cb-4f1e0c2a9b7d3e15', 'the session is still found');
  });
  it('names the turn’s folder as chat/send.workspace when given one', () => {
    const r = loadRequest('ask-mode');
    assert.equal(
      planTurn(r.model, r.messages, r.options, { mode: 'auto', utilityModel: '' }, true, 't', '/home/dev/web').params
        .workspace,
      '/home/dev/web',
    );
    assert.ok(
      !('workspace' in planTurn(r.model, r.messages, r.options, { mode: 'auto', utilityModel: '' }, true, 't').params),
    );
  });
  it('counts the new request’s images, except in utility requests (the note would become the title)', () => {
    const png = new stub.LanguageModelDataPart(new Uint8Array([0x89, 0x50]), 'image/png');
    const main = loadRequest('ask-mode');
    (main.messages.at(-1)!.content as unknown[]).push(png);
    assert.equal(
      planTurn(main.model, main.messages, main.options, { mode: 'auto', utilityModel: '' }, true, 't').imagesNotSent,
      1,
    );
    const title = loadRequest('utility-title');
    (title.messages.at(-1)!.content as unknown[]).push(png);
    assert.equal(
      planTurn(title.model, title.messages, title.options, { mode: 'auto', utilityModel: '' }, true, 't').imagesNotSent,
      0,
    );
  });
  it('passes the turn id through', () => {
    const r = loadRequest('ask-mode');
    assert.equal(
      planTurn(r.model, r.messages, r.options, { mode: 'auto', utilityModel: '' }, true, 'vsc-42').params.turnId,
      'vsc-42',
    );
  });
});

describe('isUtilityRequest', () => {
  const cases: [string, Parameters<typeof isUtilityRequest>[0], boolean][] = [
    ['no id, no tools', { modelOptions: {} }, true],
    ['no id, empty tools', { modelOptions: {}, tools: [] }, true],
    ['no modelOptions at all', {}, true],
    ['id, no tools', { modelOptions: { _conversationId: 'a1' } }, false],
    ['tools, no id', { modelOptions: {}, tools: [{ name: 'read_file', description: '' }] }, false],
    ['empty id counts as none', { modelOptions: { _conversationId: '' } }, true],
    ['non-string id counts as none', { modelOptions: { _conversationId: 42 } }, true],
    ['the Chat view, no id, no tools', { modelOptions: {}, requestInitiator: 'github.copilot-chat' }, true],
    [
      'the Chat view with an id',
      { modelOptions: { _conversationId: 'a1' }, requestInitiator: 'github.copilot-chat' },
      false,
    ],
    ['another extension, no id, no tools', { modelOptions: {}, requestInitiator: 'someone.other-extension' }, false],
    ['another extension, no modelOptions', { requestInitiator: 'someone.other-extension' }, false],
    ['a non-string initiator is ignored', { modelOptions: {}, requestInitiator: 42 }, true],
  ];
  for (const [name, options, expected] of cases) it(name, () => assert.equal(isUtilityRequest(options), expected));
});

describe('classifyPart', () => {
  it('recognises the API classes', () => {
    assert.deepEqual(classifyPart(new stub.LanguageModelTextPart('a')), { type: 'text', value: 'a' });
    assert.equal(classifyPart(new stub.LanguageModelToolCallPart('c', 'n', {})).type, 'toolCall');
    assert.equal(classifyPart(new stub.LanguageModelToolResultPart('c', [])).type, 'toolResult');
    assert.equal(classifyPart(new stub.LanguageModelDataPart(new Uint8Array(), 'x')).type, 'data');
    assert.equal(classifyPart(new stub.LanguageModelThinkingPart('hmm', 'id')).type, 'other');
  });
  it('recognises parts from another copy of the classes by shape', () => {
    assert.deepEqual(classifyPart({ value: 'plain' }), { type: 'text', value: 'plain' });
    assert.equal(classifyPart({ callId: 'c', name: 'read_file', input: {} }).type, 'toolCall');
    assert.equal(classifyPart({ callId: 'c', content: [] }).type, 'toolResult');
    assert.equal(classifyPart({ mimeType: 'stateful_marker', data: new Uint8Array([1]) }).type, 'data');
    // A thinking part from elsewhere has `value` too, but also an id/metadata: not answer text.
    assert.equal(classifyPart({ value: 'thinking…', id: 't1' }).type, 'other');
    assert.equal(classifyPart('a string').type, 'other');
    assert.equal(classifyPart(null).type, 'other');
  });
});

describe('image parts', () => {
  const bytes = new Uint8Array([0x89, 0x50, 0x4e, 0x47]);
  const user = (...content: unknown[]) => ({ role: 1, name: undefined, content });
  const assistant = (...content: unknown[]) => ({ role: 2, name: undefined, content });

  it('recognises LanguageModelDataPart images and image parts of other shapes, nothing else', () => {
    assert.equal(imageMimeOf(new stub.LanguageModelDataPart(bytes, 'image/png')), 'image/png');
    assert.equal(
      imageMimeOf({ mimeType: 'image/jpeg', data: bytes }),
      'image/jpeg',
      'a part from another copy of the API',
    );
    assert.equal(
      imageMimeOf({ mimeType: 'IMAGE/WEBP', data: { buffer: [1, 2] } }),
      'IMAGE/WEBP',
      'whatever its data arrived as',
    );
    assert.equal(imageMimeOf(new stub.LanguageModelDataPart(bytes, 'stateful_marker')), undefined);
    assert.equal(imageMimeOf(stub.LanguageModelDataPart.text('x')), undefined);
    assert.equal(imageMimeOf(new stub.LanguageModelTextPart('image/png')), undefined);
    assert.equal(imageMimeOf(null), undefined);
  });
  it('keeps the text of a message with images, and counts the new request’s images', () => {
    const c = convertMessages([
      user(
        new stub.LanguageModelTextPart('What is in '),
        new stub.LanguageModelDataPart(bytes, 'image/png'),
        new stub.LanguageModelTextPart('this picture?'),
      ),
      user({ mimeType: 'image/jpeg', data: bytes }),
    ] as never);
    assert.deepEqual(c.messages, [{ role: 'user', text: 'What is in this picture?' }]);
    assert.equal(c.newImages, 2);
  });
  it('gives the sidecar the new request’s images it can send, as base64, and no earlier ones', () => {
    const c = convertMessages([
      user(new stub.LanguageModelTextPart('Earlier:'), new stub.LanguageModelDataPart(bytes, 'image/gif')),
      assistant(new stub.LanguageModelTextPart('Seen.')),
      user(
        new stub.LanguageModelTextPart('Now these:'),
        new stub.LanguageModelDataPart(new Uint8Array([0x89, 0x50, 0x4e, 0x47]), 'IMAGE/PNG'),
        new stub.LanguageModelDataPart(bytes, 'image/svg+xml'),
      ),
    ] as never);
    assert.equal(c.newImages, 2);
    assert.deepEqual(c.sendableImages, [{ mimeType: 'image/png', data: 'iVBORw==' }]);
    assert.equal(imageOf({ mimeType: 'image/png', data: { buffer: [1, 2] } }), undefined, 'bytes that are not bytes');
    assert.equal(imageOf(new stub.LanguageModelDataPart(new Uint8Array(), 'image/png')), undefined, 'no bytes');
  });
  it('does not count images earlier in the history (they were pointed out in their own turn)', () => {
    const c = convertMessages([
      user(new stub.LanguageModelTextPart('Look:'), new stub.LanguageModelDataPart(bytes, 'image/png')),
      assistant(new stub.LanguageModelTextPart('I cannot see it.')),
      user(new stub.LanguageModelTextPart('Fine, in words then.')),
    ] as never);
    assert.equal(c.newImages, 0);
    assert.equal(c.messages.length, 3);
  });
});

describe('tool lines', () => {
  it('renders a call with its arguments on one short line', () => {
    assert.equal(
      renderToolCall('read_file', { filePath: 'src/a.ts' }),
      '(tool call: read_file {"filePath":"src/a.ts"})',
    );
    assert.equal(renderToolCall('get_errors', {}), '(tool call: get_errors)');
    const long = renderToolCall('create_file', { content: 'x'.repeat(5000) });
    assert.ok(long.length < 260, `${long.length}`);
    assert.ok(long.includes('…'));
  });
  it('renders a result as one line, bounded', () => {
    const part = new stub.LanguageModelTextPart('line one\nline two\n' + 'y'.repeat(2000));
    const line = renderToolResult('read_file', [part]);
    assert.ok(line.startsWith('(tool result of read_file: line one line two '));
    assert.ok(line.length < 340, `${line.length}`);
    assert.equal(renderToolResult(undefined, []), '(tool result: no text)');
  });
  it('keeps the text around tool calls in order', () => {
    const messages = [
      {
        role: 2,
        name: undefined,
        content: [
          new stub.LanguageModelTextPart('Before.'),
          new stub.LanguageModelToolCallPart('1', 'list_dir', { path: '.' }),
          new stub.LanguageModelTextPart('After.'),
        ],
      },
    ];
    const { messages: out } = convertMessages(messages as never);
    assert.deepEqual(out, [{ role: 'assistant', text: 'Before.\n(tool call: list_dir {"path":"."})\nAfter.' }]);
  });
});

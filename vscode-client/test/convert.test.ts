import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { classifyPart, convertMessages, isUtilityRequest, renderToolCall, renderToolResult } from '../src/convert';
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

describe('planTurn', () => {
  it('sends utility requests to cursorBridge.utilityModel, without session fields', () => {
    const r = loadRequest('utility-title');
    const plan = planTurn(r.model, r.messages, r.options, { mode: 'agent', utilityModel: 'composer-2.5-fast' }, true, 't');
    assert.equal(plan.params.model, 'composer-2.5-fast');
    assert.equal(plan.params.mode, 'ask', 'the mode setting does not apply to utility requests');
    assert.equal(plan.params.utility, true);
    assert.equal(plan.params.conversationId, undefined);
    assert.equal(plan.params.sessionId, undefined);
  });
  it('uses the selected model for utility requests when no utility model is set', () => {
    const r = loadRequest('utility-progress');
    assert.equal(planTurn(r.model, r.messages, r.options, { mode: 'auto', utilityModel: '' }, true, 't').params.model, 'sonnet-5');
  });
  it('ignores the utility model for main requests', () => {
    const r = loadRequest('agent-first-turn');
    assert.equal(planTurn(r.model, r.messages, r.options, { mode: 'auto', utilityModel: 'fast' }, true, 't').params.model, 'sonnet-5');
  });
  it('asks (never agent) in an untrusted workspace, whatever the request or setting says', () => {
    const r = loadRequest('agent-second-turn');
    const plan = planTurn(r.model, r.messages, r.options, { mode: 'agent', utilityModel: '' }, false, 't');
    assert.equal(plan.params.mode, 'ask');
    assert.equal(plan.params.sessionId, 'cb-4f1e0c2a9b7d3e15', 'the session is still found');
  });
  it('passes the turn id through', () => {
    const r = loadRequest('ask-mode');
    assert.equal(planTurn(r.model, r.messages, r.options, { mode: 'auto', utilityModel: '' }, true, 'vsc-42').params.turnId, 'vsc-42');
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
    ['the Chat view with an id', { modelOptions: { _conversationId: 'a1' }, requestInitiator: 'github.copilot-chat' }, false],
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

describe('tool lines', () => {
  it('renders a call with its arguments on one short line', () => {
    assert.equal(renderToolCall('read_file', { filePath: 'src/a.ts' }), '(tool call: read_file {"filePath":"src/a.ts"})');
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
        content: [new stub.LanguageModelTextPart('Before.'), new stub.LanguageModelToolCallPart('1', 'list_dir', { path: '.' }), new stub.LanguageModelTextPart('After.')],
      },
    ];
    const { messages: out } = convertMessages(messages as never);
    assert.deepEqual(out, [{ role: 'assistant', text: 'Before.\n(tool call: list_dir {"path":"."})\nAfter.' }]);
  });
});

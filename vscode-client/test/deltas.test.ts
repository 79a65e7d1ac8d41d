import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { inlineCode, TurnRenderer, type RendererOptions } from '../src/deltas';
import type { ChatDelta, DeltaBody } from '../src/protocol';
import * as stub from './vscode-stub';

type Reported = { text: string } | { thinking: string | string[]; id?: string; done?: boolean } | { other: unknown };

function run(
  bodies: DeltaBody[],
  options: Partial<RendererOptions> = {},
): { parts: Reported[]; renderer: TurnRenderer } {
  const parts: Reported[] = [];
  const renderer = new TurnRenderer(
    (p) => {
      if (p instanceof stub.LanguageModelTextPart) parts.push({ text: p.value });
      else if (p instanceof stub.LanguageModelThinkingPart) {
        parts.push({ thinking: p.value, id: p.id, ...(p.metadata?.vscode_reasoning_done ? { done: true } : {}) });
      } else parts.push({ other: p });
    },
    { showToolActivity: true, thinkingPart: stub.LanguageModelThinkingPart, ...options },
  );
  bodies.forEach((b, i) => renderer.handle({ turnId: 't', seq: i + 1, ...b } as ChatDelta));
  renderer.finish();
  return { parts, renderer };
}

const text = (parts: Reported[]) => parts.map((p) => ('text' in p ? p.text : '')).join('');

describe('TurnRenderer', () => {
  it('streams text deltas as text parts, unchanged and in order', () => {
    const { parts } = run([
      { kind: 'text', text: 'Hello, ' },
      { kind: 'text', text: 'wörld 🌍' },
    ]);
    assert.deepEqual(parts, [{ text: 'Hello, ' }, { text: 'wörld 🌍' }]);
  });

  it('streams thinking as thinking parts of one block, closed by thinkingDone', () => {
    const { parts } = run([
      { kind: 'thinking', text: '2 and 2 ' },
      { kind: 'thinking', text: 'make 4' },
      { kind: 'thinkingDone' },
      { kind: 'text', text: '4' },
    ]);
    assert.deepEqual(parts, [
      { thinking: '2 and 2 ', id: 'cursor-thinking-1' },
      { thinking: 'make 4', id: 'cursor-thinking-1' },
      { thinking: '', id: 'cursor-thinking-1', done: true },
      { text: '4' },
    ]);
  });

  it('closes an open thinking block when the answer starts, and numbers later blocks', () => {
    const { parts } = run([
      { kind: 'thinking', text: 'a' },
      { kind: 'text', text: 'x' },
      { kind: 'thinking', text: 'b' },
    ]);
    assert.deepEqual(parts, [
      { thinking: 'a', id: 'cursor-thinking-1' },
      { thinking: '', id: 'cursor-thinking-1', done: true },
      { text: 'x' },
      { thinking: 'b', id: 'cursor-thinking-2' },
      { thinking: '', id: 'cursor-thinking-2', done: true },
    ]);
  });

  it('drops thinking when the host has no thinking part', () => {
    const { parts } = run(
      [{ kind: 'thinking', text: 'secret reasoning' }, { kind: 'thinkingDone' }, { kind: 'text', text: 'answer' }],
      { thinkingPart: undefined },
    );
    assert.deepEqual(parts, [{ text: 'answer' }]);
  });

  it('renders a tool as one quoted line, completed in place', () => {
    const { parts } = run([
      { kind: 'text', text: 'Running the tests.' },
      { kind: 'toolStarted', callId: 'c1', tool: 'shell', summary: 'npm test' },
      { kind: 'toolCompleted', callId: 'c1', tool: 'shell', summary: 'npm test', ok: true },
      { kind: 'text', text: '\n\nAll green.' },
    ]);
    assert.equal(text(parts), 'Running the tests.\n\n> 🔧 shell: `npm test` ✓\n\n\n\nAll green.');
  });

  it('marks failed tools with their detail', () => {
    const { parts } = run([
      { kind: 'toolStarted', callId: 'c1', tool: 'shell', summary: 'npm test' },
      {
        kind: 'toolCompleted',
        callId: 'c1',
        tool: 'shell',
        summary: 'npm test',
        ok: false,
        detail: 'exit code 1\nmore',
      },
    ]);
    assert.equal(text(parts), '> 🔧 shell: `npm test` ✗ exit code 1 more\n\n');
  });

  it('closes a tool line when something else comes first, and repeats the label on completion', () => {
    const { parts } = run([
      { kind: 'toolStarted', callId: 'a', tool: 'read', summary: 'src/a.ts' },
      { kind: 'toolStarted', callId: 'b', tool: 'read', summary: 'src/b.ts' },
      { kind: 'toolCompleted', callId: 'a', tool: 'read', summary: 'src/a.ts', ok: true },
      { kind: 'toolCompleted', callId: 'b', tool: 'read', summary: 'src/b.ts', ok: true },
    ]);
    assert.equal(
      text(parts),
      '> 🔧 read: `src/a.ts`\n\n> 🔧 read: `src/b.ts`\n\n> 🔧 read: `src/a.ts` ✓\n\n> 🔧 read: `src/b.ts` ✓\n\n',
    );
  });

  it('starts tool lines on a paragraph of their own, so Markdown does not merge them with text', () => {
    const { parts } = run([
      { kind: 'text', text: 'Line without newline' },
      { kind: 'toolStarted', callId: 'c', tool: 'ls', summary: '' },
      { kind: 'text', text: 'after' },
    ]);
    assert.equal(text(parts), 'Line without newline\n\n> 🔧 ls\n\nafter');
  });

  it('keeps summaries on one line and backticks in them safe', () => {
    const { parts } = run([{ kind: 'toolStarted', callId: 'c', tool: 'shell', summary: 'echo `date`\nrm -rf x' }]);
    assert.equal(text(parts), '> 🔧 shell: ``echo `date` rm -rf x``\n\n');
    assert.equal(inlineCode('`x`'), '`` `x` ``');
  });

  it('leaves tool lines out when showToolActivity is off', () => {
    const { parts } = run(
      [
        { kind: 'toolStarted', callId: 'c', tool: 'shell', summary: 'ls' },
        { kind: 'toolCompleted', callId: 'c', tool: 'shell', summary: 'ls', ok: true },
        { kind: 'text', text: 'done' },
      ],
      { showToolActivity: false },
    );
    assert.deepEqual(parts, [{ text: 'done' }]);
  });

  it('shows permissionDenied once, with its hint, even without tool activity', () => {
    const denied: DeltaBody = {
      kind: 'permissionDenied',
      tool: 'shell',
      summary: 'rm -rf build',
      hint: 'Cursor asked for approval, which the bridge cannot give. Turn on cursorBridge.allowUnattended.',
    };
    for (const showToolActivity of [true, false]) {
      const { parts } = run([{ kind: 'text', text: 'Cleaning.' }, denied, denied], { showToolActivity });
      assert.equal(
        text(parts),
        'Cleaning.\n\n> ⚠️ Not allowed to run shell: `rm -rf build`. Cursor asked for approval, which the bridge cannot give. Turn on cursorBridge.allowUnattended.\n\n',
      );
    }
  });

  it('adds no tool or permission lines to utility answers (they become titles)', () => {
    const { parts } = run(
      [
        { kind: 'toolStarted', callId: 'c', tool: 'shell', summary: 'ls' },
        { kind: 'permissionDenied', tool: 'shell', summary: 'ls', hint: 'h' },
        { kind: 'text', text: 'Cart discount bug' },
      ],
      { utility: true },
    );
    assert.deepEqual(parts, [{ text: 'Cart discount bug' }]);
  });

  it('reports a toolCall delta as a LanguageModelToolCallPart, with the sidecar’s call id and input unchanged', () => {
    const input = { filePath: '/w/a.txt', content: 'hi' };
    const { parts, renderer } = run([
      { kind: 'thinking', text: 'I will create it' },
      { kind: 'text', text: 'Creating it.' },
      { kind: 'toolCall', callId: 'call_5f0c9a1b2c3d4e5f60718293', name: 'create_file', input },
      { kind: 'toolCall', callId: 'call_0123456789abcdef01234567', name: 'run_in_terminal', input: { command: 'ls' } },
    ]);
    const calls = parts.flatMap((p) =>
      'other' in p && p.other instanceof stub.LanguageModelToolCallPart ? [p.other] : [],
    );
    assert.deepEqual(
      calls.map((c) => [c.callId, c.name, c.input]),
      [
        ['call_5f0c9a1b2c3d4e5f60718293', 'create_file', input],
        ['call_0123456789abcdef01234567', 'run_in_terminal', { command: 'ls' }],
      ],
    );
    assert.deepEqual(parts.slice(0, 3), [
      { thinking: 'I will create it', id: 'cursor-thinking-1' },
      { thinking: '', id: 'cursor-thinking-1', done: true },
      { text: 'Creating it.' },
    ]);
    assert.equal(parts.length, 5, 'the calls, and no tool lines or other text');
    assert.equal(renderer.toolCalls, 2);
  });

  it('closes an open tool line before a tool call, and reports no call in utility answers', () => {
    const { parts } = run([
      { kind: 'toolStarted', callId: 'c1', tool: 'read', summary: 'a.ts' },
      { kind: 'toolCall', callId: 'call_1', name: 'list_dir', input: { path: '/w' } },
    ]);
    assert.deepEqual(parts.slice(0, 2), [{ text: '> 🔧 read: `a.ts`' }, { text: '\n\n' }]);
    assert.ok('other' in parts[2] && parts[2].other instanceof stub.LanguageModelToolCallPart);
    const utility = run([{ kind: 'toolCall', callId: 'call_1', name: 'list_dir', input: {} }], { utility: true });
    assert.deepEqual(utility.parts, []);
    assert.equal(utility.renderer.toolCalls, 0);
  });

  it('remembers the session and usage without reporting them', () => {
    const usage = { inputTokens: 1, outputTokens: 2, cacheReadTokens: 3, cacheWriteTokens: 4 };
    const { parts, renderer } = run([
      { kind: 'session', sessionId: 'cb-1', resumed: false, replayed: false },
      { kind: 'usage', usage },
    ]);
    assert.deepEqual(parts, []);
    assert.equal(renderer.sessionId, 'cb-1');
    assert.deepEqual(renderer.usage, usage);
  });

  it('sets a closing Markdown explanation apart from the text before it', () => {
    const parts: string[] = [];
    const r = new TurnRenderer((p) => parts.push((p as stub.LanguageModelTextPart).value), { showToolActivity: true });
    r.handle({ turnId: 't', seq: 1, kind: 'text', text: 'Partial' });
    r.markdown('**Problem.**\n');
    assert.equal(parts.join(''), 'Partial\n\n**Problem.**\n');
  });
});

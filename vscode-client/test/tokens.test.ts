import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { estimateTokens, TokenCounter } from '../src/tokens';
import { FIXTURES } from './helpers';
import * as stub from './vscode-stub';

// Reference tokenizers (test-only dependency). Cursor's models use their own tokenizers, which
// are not public; OpenAI's two current encodings bracket what is typical.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const cl100k = require('gpt-tokenizer/encoding/cl100k_base') as { encode(text: string): number[] };
// eslint-disable-next-line @typescript-eslint/no-require-imports
const o200k = require('gpt-tokenizer/encoding/o200k_base') as { encode(text: string): number[] };

const samples = fs
  .readdirSync(path.join(FIXTURES, 'tokens'))
  .sort()
  .map((f) => ({ name: f, text: fs.readFileSync(path.join(FIXTURES, 'tokens', f), 'utf8') }));

const charsOver4 = (t: string) => Math.ceil(t.length / 4);

describe('estimateTokens against real tokenizers', () => {
  for (const { name, text } of samples) {
    const cl = cl100k.encode(text).length;
    const o2 = o200k.encode(text).length;
    const truth = (cl + o2) / 2;
    const est = estimateTokens(text);
    const quarter = charsOver4(text);
    const info = `${name}: estimate ${est}, chars/4 ${quarter}, cl100k ${cl}, o200k ${o2}`;
    if (/^(code|prose-english|prompt|tool-schema)/.test(name)) {
      it(`${name}: at least as close as chars/4, and within 10%`, () => {
        assert.ok(Math.abs(est - truth) <= Math.abs(quarter - truth), info);
        assert.ok(Math.abs(est - truth) / truth <= 0.1, info);
      });
    } else {
      // Other languages vary most between tokenizers: stay between them (with some slack).
      it(`${name}: between the two tokenizers (±15%)`, () => {
        assert.ok(est >= 0.85 * Math.min(cl, o2) && est <= 1.15 * Math.max(cl, o2), info);
      });
    }
  }

  it('is closer than chars/4 over all samples together', () => {
    let estErr = 0;
    let quarterErr = 0;
    for (const { text } of samples) {
      const truth = (cl100k.encode(text).length + o200k.encode(text).length) / 2;
      estErr += Math.abs(estimateTokens(text) - truth) / truth;
      quarterErr += Math.abs(charsOver4(text) - truth) / truth;
    }
    assert.ok(estErr < quarterErr, `estimate ${estErr.toFixed(2)} vs chars/4 ${quarterErr.toFixed(2)}`);
  });

  it('counts CJK per character, where chars/4 is far too low', () => {
    const text = '今天下午我们去了公园';
    assert.ok(estimateTokens(text) >= text.length * 0.8);
  });

  it('handles edge cases', () => {
    assert.equal(estimateTokens(''), 0);
    assert.equal(estimateTokens(' '), 1);
    assert.equal(estimateTokens('a'), 1);
    assert.ok(estimateTokens('🎉🎉') >= 2);
    assert.ok(estimateTokens('x'.repeat(10_000)) > 1000, 'a long run is not one token');
  });

  it('is cheap: a 15 KB prompt costs about as much as one regex pass over it', () => {
    // Compared with a reference measured in the same run (a word-splitting regex over the same
    // text), interleaved and taking the best of several rounds, so a loaded machine slows both
    // alike; the figure in milliseconds is only printed. Quadratic work would be far off.
    const text = samples
      .map((s) => s.text)
      .join('\n')
      .repeat(2)
      .slice(0, 15_000);
    const runs = 50;
    const time = (f: () => unknown) => {
      const started = process.hrtime.bigint();
      for (let i = 0; i < runs; i++) f();
      return Number(process.hrtime.bigint() - started) / 1e6 / runs;
    };
    let ours = Infinity;
    let reference = Infinity;
    for (let round = 0; round < 7; round++) {
      ours = Math.min(
        ours,
        time(() => estimateTokens(text)),
      );
      reference = Math.min(
        reference,
        time(() => text.split(/(\s+|[^\p{L}\p{N}\s]+)/u).length),
      );
    }
    console.log(
      `estimateTokens: ${ours.toFixed(3)} ms per 15 KB call; reference regex pass ${reference.toFixed(3)} ms`,
    );
    assert.ok(ours < reference * 25, `${ours.toFixed(3)} ms vs ${reference.toFixed(3)} ms for the reference`);
  });
});

describe('TokenCounter', () => {
  it('caches by text', () => {
    const c = new TokenCounter();
    const n = c.count('function add(a, b) { return a + b; }');
    assert.equal(c.count('function add(a, b) { return a + b; }'), n);
    assert.equal(c.misses, 1);
    assert.equal(c.hits, 1);
  });

  it('evicts the least recently used entry first', () => {
    const c = new TokenCounter(2);
    c.count('one');
    c.count('two');
    c.count('one'); // now "two" is the oldest
    c.count('three');
    assert.equal(c.size, 2);
    c.count('one');
    assert.equal(c.hits, 2, '"one" stayed');
    c.count('two');
    assert.equal(c.misses, 4, '"two" was evicted');
  });

  it('bounds the characters it keeps', () => {
    const c = new TokenCounter(1000, 100);
    for (let i = 0; i < 20; i++) c.count(`${i}`.padEnd(20, 'x'));
    assert.ok(c.size <= 5, `${c.size}`);
  });

  it('counts a message: its text, tool calls and results, plus framing; not data parts', () => {
    const c = new TokenCounter();
    const message = {
      role: 1,
      name: undefined,
      content: [
        new stub.LanguageModelTextPart('Hello there'),
        new stub.LanguageModelToolCallPart('1', 'read_file', { filePath: 'a.ts' }),
        new stub.LanguageModelToolResultPart('1', [new stub.LanguageModelTextPart('export const x = 1;')]),
        new stub.LanguageModelDataPart(new Uint8Array(1000), 'stateful_marker'),
      ],
    };
    const expected =
      3 +
      estimateTokens('Hello there') +
      estimateTokens('read_file') +
      estimateTokens('{"filePath":"a.ts"}') +
      estimateTokens('export const x = 1;');
    assert.equal(c.count(message as never), expected);
  });
});

// Token counts for `provideTokenCount`, computed here and never over the wire: the Chat view asks
// thousands of times per request (14,693 calls in one short measured session), mostly for tool
// schema fragments it has asked about before. So: one cheap pass over the text, an LRU cache keyed
// by the text, and an estimate modelled on how BPE tokenizers cut text (words, digit groups,
// punctuation runs, indentation, one token per CJK character) rather than chars/4, which counts
// code too low and prose too high. test/tokens.test.ts holds it against real tokenizers.

import type * as vscode from 'vscode';
import { classifyPart } from './convert';

// Pieces in the spirit of the cl100k/o200k pre-tokenizers. Letters include Latin-1/Extended,
// Greek and Cyrillic, so accented words stay one piece.
const PIECE =
  /([A-Za-z\u00C0-\u024F\u0370-\u03FF\u0400-\u04FF]+)|([0-9]+)|([ \t]*[\r\n][\s]*|[ \t\f\v]+)|([\u2E80-\u9FFF\uA960-\uA97F\uAC00-\uD7FF\uF900-\uFAFF\uFE30-\uFE4F\uFF00-\uFFEF])|([!-/:-@[-`{-~]+)|([^])/g;

const UPPER_AFTER_LOWER = /[a-z][A-Z]/g;
// eslint-disable-next-line no-control-regex -- everything outside ASCII, whose range starts at NUL
const NON_ASCII = /[^\x00-\x7F]/g;

/** Estimated tokens of a run of letters: common words are one token; long ones and identifiers more. */
function wordTokens(word: string): number {
  // camelCase humps are separate tokens in practice ("get", "User", "Name").
  const humps = 1 + (word.match(UPPER_AFTER_LOWER)?.length ?? 0);
  const perHump = word.length / humps;
  // Accented letters are rarer in BPE vocabularies and split words around them.
  const accents = word.match(NON_ASCII)?.length ?? 0;
  const longWord = perHump > 7 ? Math.ceil((perHump - 7) / 5) * humps : 0;
  return humps + longWord + accents;
}

const LETTER = /[A-Za-z\u00C0-\u024F\u0370-\u03FF\u0400-\u04FF]/;

/** The estimated token count of `text`. */
export function estimateTokens(text: string): number {
  let tokens = 0;
  let afterSymbol = false;
  PIECE.lastIndex = 0;
  for (let m = PIECE.exec(text); m !== null; m = PIECE.exec(text)) {
    const [piece, word, digits, space, cjk, symbols] = m;
    if (word !== undefined) tokens += wordTokens(word);
    else if (digits !== undefined) tokens += Math.ceil(digits.length / 3);
    else if (space !== undefined) {
      const lastBreak = Math.max(space.lastIndexOf('\n'), space.lastIndexOf('\r'));
      if (lastBreak >= 0) {
        // Line breaks merge into a symbol run before them (";\n", "{\n"); the indentation after
        // them is one more token (its last space joins the next word).
        if (!afterSymbol) tokens += 1;
        if (space.length - lastBreak - 1 > 1) tokens += 1;
      } else if (space.length > 1) {
        tokens += 1; // a single space joins the next word or symbol
      }
    } else if (cjk !== undefined) tokens += 1;
    else if (symbols !== undefined) {
      // Short symbol runs are single tokens ("();", "=>", "\":\""); one symbol right before a
      // word joins it (".length", "(job").
      const next = text.charAt(PIECE.lastIndex);
      const own = LETTER.test(next) ? symbols.length - 1 : symbols.length;
      tokens += Math.ceil(own / 3);
    } else tokens += piece.length; // emoji and other symbols: about one per UTF-16 unit
    afterSymbol = symbols !== undefined;
  }
  return Math.max(text.length > 0 ? 1 : 0, Math.round(tokens));
}

/** Per-message framing (role markers) that chat formats add around each message. */
const MESSAGE_OVERHEAD = 3;

/** A bounded LRU of counts, keyed by the text itself. */
export class TokenCounter {
  private readonly cache = new Map<string, number>();
  private cachedChars = 0;
  hits = 0;
  misses = 0;

  constructor(
    private readonly maxEntries = 20_000,
    private readonly maxChars = 16_000_000,
  ) {}

  countText(text: string): number {
    const cached = this.cache.get(text);
    if (cached !== undefined) {
      this.hits++;
      // Re-insert: a Map iterates in insertion order, so the first key is the least recently used.
      this.cache.delete(text);
      this.cache.set(text, cached);
      return cached;
    }
    this.misses++;
    const count = estimateTokens(text);
    if (text.length <= this.maxChars / 4) {
      this.cache.set(text, count);
      this.cachedChars += text.length;
      this.evict();
    }
    return count;
  }

  count(input: string | vscode.LanguageModelChatRequestMessage): number {
    if (typeof input === 'string') return this.countText(input);
    let total = MESSAGE_OVERHEAD;
    for (const raw of input.content) {
      const part = classifyPart(raw);
      switch (part.type) {
        case 'text':
          total += this.countText(part.value);
          break;
        case 'toolCall':
          total += this.countText(part.name) + this.countText(JSON.stringify(part.input) ?? '');
          break;
        case 'toolResult':
          for (const inner of part.content) {
            const p = classifyPart(inner);
            if (p.type === 'text') total += this.countText(p.value);
          }
          break;
        case 'data':
        case 'other':
          break;
      }
    }
    return total;
  }

  get size(): number {
    return this.cache.size;
  }

  private evict(): void {
    while (this.cache.size > this.maxEntries || this.cachedChars > this.maxChars) {
      const oldest = this.cache.keys().next();
      if (oldest.done) return;
      this.cache.delete(oldest.value);
      this.cachedChars -= oldest.value.length;
    }
  }
}

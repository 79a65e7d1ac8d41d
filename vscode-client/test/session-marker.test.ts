import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { convertMessages } from '../src/convert';
import { encodeMarker, MARKER_MIME, markerText, parseMarker } from '../src/session-marker';
import * as stub from './vscode-stub';

describe('stateful_marker', () => {
  it('has the "<modelId>\\<marker>" layout with a self-identifying marker', () => {
    assert.equal(markerText('sonnet-5', 'cb-4f1e0c2a9b7d3e15'), 'sonnet-5\\cursor-bridge:v1:cb-4f1e0c2a9b7d3e15');
    assert.equal(MARKER_MIME, 'stateful_marker');
  });
  it('round-trips', () => {
    assert.equal(parseMarker(encodeMarker('auto', 'cb-1234')), 'cb-1234');
  });
  it('survives Copilot rewriting the model prefix to another model', () => {
    const written = new TextDecoder().decode(encodeMarker('sonnet-5', 'cb-abc'));
    const rewritten = `gpt-5.6-sol${written.slice(written.indexOf('\\'))}`;
    assert.equal(rewritten, 'gpt-5.6-sol\\cursor-bridge:v1:cb-abc');
    assert.equal(parseMarker(new TextEncoder().encode(rewritten)), 'cb-abc');
  });
  it('takes what follows the LAST backslash (model ids may contain one)', () => {
    assert.equal(parseMarker('vendor\\family\\model\\cursor-bridge:v1:cb-9'), 'cb-9');
    assert.equal(parseMarker('cursor-bridge:v1:cb-9'), 'cb-9', 'no prefix at all');
  });
  it('rejects markers that are not ours, or broken', () => {
    for (const text of [
      'rec-main\\rec-marker-call-26',
      'sonnet-5\\cursor-bridge:v2:cb-1',
      'sonnet-5\\cursor-bridge:v1:',
      'sonnet-5\\cursor-bridge:v1:has space',
      'sonnet-5\\cursor-bridge:v1:cb-1\\',
      '',
    ]) {
      assert.equal(parseMarker(text), undefined, text);
    }
  });
  it('is found in history; the newest of ours wins and other data parts are ignored', () => {
    const data = (text: string, mime = MARKER_MIME) =>
      new stub.LanguageModelDataPart(new TextEncoder().encode(text), mime);
    const messages = [
      { role: 1, name: undefined, content: [new stub.LanguageModelTextPart('q1')] },
      { role: 2, name: undefined, content: [data(markerText('m', 'cb-first')), new stub.LanguageModelTextPart('a1')] },
      { role: 1, name: undefined, content: [new stub.LanguageModelTextPart('q2')] },
      { role: 2, name: undefined, content: [data(markerText('m', 'cb-second')), new stub.LanguageModelTextPart('a2')] },
      {
        role: 2,
        name: undefined,
        content: [data('m\\someone-else:1'), data(markerText('m', 'cb-other-mime'), 'application/json')],
      },
      { role: 1, name: undefined, content: [new stub.LanguageModelTextPart('q3')] },
    ];
    assert.equal(convertMessages(messages as never).sessionId, 'cb-second');
  });
});

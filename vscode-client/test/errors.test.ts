import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ResponseError } from 'vscode-jsonrpc/node';
import {
  BridgeError,
  CLIENT_ERROR_KINDS,
  FAILURES,
  plainMessage,
  renderFailure,
  toBridgeError,
  type FailureKind,
} from '../src/errors';
import { ERROR_KINDS } from '../src/protocol';

// The rendering each kind must get: set-up problems explain themselves as the answer, transient
// ones throw (error box with Try Again), a cancel shows nothing. An answer with nothing visible
// is said in text (the Copilot harness fails a turn whose first reply is empty).
const EXPECTED: Record<FailureKind, 'markdown' | 'throw' | 'silent'> = {
  cliNotFound: 'markdown',
  authRequired: 'markdown',
  invalidModel: 'markdown',
  usageLimit: 'markdown',
  sidecarNotFound: 'markdown',
  sidecarGaveUp: 'markdown',
  rateLimited: 'throw',
  network: 'throw',
  timeout: 'throw',
  emptyResponse: 'markdown',
  sidecarCrashed: 'throw',
  cliFailed: 'throw',
  invalidParams: 'throw',
  notInitialized: 'throw',
  internal: 'throw',
  badToolCall: 'throw',
  toolPolicy: 'throw',
  unknown: 'throw',
  cancelled: 'silent',
};

const ALL_KINDS: FailureKind[] = [...ERROR_KINDS, ...CLIENT_ERROR_KINDS];

describe('failure table', () => {
  it('covers every protocol kind and every client kind', () => {
    assert.deepEqual(Object.keys(FAILURES).sort(), [...ALL_KINDS].sort());
    assert.deepEqual(Object.keys(EXPECTED).sort(), [...ALL_KINDS].sort());
  });

  for (const kind of ALL_KINDS) {
    it(`${kind} → ${EXPECTED[kind]}`, () => {
      const r = renderFailure(
        new BridgeError(kind, 'raw message from /home/dev/secret/path.rs:12', 'hint', 'stderr tail'),
      );
      assert.equal(r.render, EXPECTED[kind]);
      const shown = r.render === 'markdown' ? r.markdown : r.render === 'throw' ? r.error.message : '';
      // Never the sidecar's raw message, hint or detail (they may hold paths and CLI output).
      assert.ok(!shown.includes('/home/dev'), shown);
      assert.ok(!shown.includes('stderr tail'), shown);
      if (r.render === 'throw') {
        assert.equal(r.error.stack, '', 'the stack is cleared (Copilot appends it)');
        assert.ok(!r.error.message.includes('\n'), 'one line');
        assert.match(r.error.message, /^\*\*Cursor Bridge:\*\* /);
        assert.match(r.error.message, /Cursor Bridge: Show Logs/);
      }
      if (r.render === 'markdown') {
        assert.match(r.markdown, /^\*\*.+\*\*\n\n/);
        assert.match(r.markdown, /Cursor Bridge: Show Logs/);
      }
    });
  }

  it('gives every kind its own text', () => {
    const texts = ALL_KINDS.filter((k) => k !== 'cancelled').map((k) => FAILURES[k].what);
    assert.equal(new Set(texts).size, texts.length);
  });

  it('names the fix for set-up problems', () => {
    assert.match(FAILURES.cliNotFound.action, /cursorBridge\.cliPath/);
    assert.match(FAILURES.authRequired.action, /agent login/);
    assert.match(FAILURES.authRequired.action, /Cursor Bridge: Set API Key/);
    assert.match(FAILURES.sidecarGaveUp.action, /Cursor Bridge: Restart Sidecar/);
    assert.match(FAILURES.timeout.action, /idleTimeoutSeconds/);
  });

  it('throws for utility requests even for set-up problems (the answer would become a title)', () => {
    const r = renderFailure(new BridgeError('authRequired', 'x'), { utility: true });
    assert.equal(r.render, 'throw');
  });

  it('has a plain-text form for notifications', () => {
    const text = plainMessage('authRequired');
    assert.ok(text.startsWith('Cursor Bridge: '));
    assert.ok(!/\*\*|`/.test(text), text);
  });
});

describe('toBridgeError', () => {
  it('reads the kind, hint and detail from error.data', () => {
    const e = toBridgeError(
      new ResponseError(-32000, 'The Cursor CLI is not logged in', {
        kind: 'authRequired',
        hint: 'Run agent login',
        detail: 'stderr',
      }),
    );
    assert.equal(e.kind, 'authRequired');
    assert.equal(e.hint, 'Run agent login');
    assert.equal(e.detail, 'stderr');
  });
  it('maps a cancelled request without data', () => {
    assert.equal(toBridgeError(new ResponseError(-32800, 'cancelled')).kind, 'cancelled');
  });
  it('maps a connection that went away to a sidecar crash', () => {
    assert.equal(
      toBridgeError(new ResponseError(-32097, 'Pending response rejected since connection got disposed')).kind,
      'sidecarCrashed',
    );
  });
  it('treats unknown kinds and other errors as unknown', () => {
    assert.equal(toBridgeError(new ResponseError(-32000, 'x', { kind: 'somethingNew' })).kind, 'unknown');
    assert.equal(toBridgeError(new ResponseError(-32601, 'Method not found')).kind, 'unknown');
    assert.equal(toBridgeError(new Error('boom')).kind, 'unknown');
    assert.equal(toBridgeError('boom').message, 'boom');
  });
  it('passes BridgeErrors through', () => {
    const e = new BridgeError('timeout', 'slow');
    assert.equal(toBridgeError(e), e);
  });
});

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEFAULTS, expandHome, readSettings, sidecarOptions } from '../src/settings';

const reader = (values: Record<string, unknown>) => ({ get: <T>(key: string) => values[key] as T | undefined });

describe('settings', () => {
  it('defaults when nothing is set', () => {
    assert.deepEqual(readSettings(reader({})), DEFAULTS);
  });
  it('clamps numbers the sidecar would reject (it takes unsigned integers)', () => {
    const s = readSettings(reader({ maxConcurrent: -3, sessionTtlMinutes: 2.7, requestTimeoutSeconds: 'soon', maxSessions: Number.NaN }));
    assert.equal(s.maxConcurrent, 1);
    assert.equal(s.sessionTtlMinutes, 2);
    assert.equal(s.requestTimeoutSeconds, DEFAULTS.requestTimeoutSeconds);
    assert.equal(s.maxSessions, DEFAULTS.maxSessions);
  });
  it('falls back for unknown enum values and trims paths', () => {
    const s = readSettings(reader({ mode: 'edit', logLevel: 'verbose', cliPath: '  /opt/cursor/agent  ' }));
    assert.equal(s.mode, 'auto');
    assert.equal(s.logLevel, 'info');
    assert.equal(s.cliPath, '/opt/cursor/agent');
  });
  it('builds initialize.options with only keys the sidecar knows', () => {
    const opts = sidecarOptions(readSettings(reader({ allowUnattended: true })), true);
    assert.deepEqual(Object.keys(opts).sort(), ['force', 'idleTimeoutSeconds', 'maxConcurrent', 'maxSessions', 'requestTimeoutSeconds', 'sessionTtlMinutes', 'spares']);
    assert.equal(opts.force, true);
    assert.equal(opts.spares, 1, 'warm spares are on by default, one');
  });
  it('passes warm spares through, 0 turning them off, clamped', () => {
    assert.equal(sidecarOptions(readSettings(reader({ warmSpares: 0 })), true).spares, 0);
    assert.equal(sidecarOptions(readSettings(reader({ warmSpares: 99 })), true).spares, 4);
  });
  it('never forces in an untrusted workspace', () => {
    assert.equal(sidecarOptions(readSettings(reader({ allowUnattended: true })), false).force, false);
    assert.equal(sidecarOptions(readSettings(reader({})), true).force, false);
  });
  it('expands ~', () => {
    assert.equal(expandHome('~/bin/agent', '/home/dev'), '/home/dev/bin/agent');
    assert.equal(expandHome('~', '/home/dev'), '/home/dev');
    assert.equal(expandHome('/usr/bin/agent', '/home/dev'), '/usr/bin/agent');
    assert.equal(expandHome('a~/b', '/home/dev'), 'a~/b');
  });
});

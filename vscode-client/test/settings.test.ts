import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEFAULTS, expandHome, readSettings, sidecarOptions, USER_ONLY_KEYS } from '../src/settings';

/** User settings `user`, and settings of the workspace (or a folder) that VS Code's `get()` would let win. */
const reader = (
  user: Record<string, unknown>,
  workspace: Record<string, unknown> = {},
  folder: Record<string, unknown> = {},
) => ({
  get: <T>(key: string) =>
    (key in folder ? folder[key] : key in workspace ? workspace[key] : user[key]) as T | undefined,
  inspect: <T>(key: string) => ({
    defaultValue: (DEFAULTS as unknown as Record<string, unknown>)[key] as T | undefined,
    globalValue: user[key] as T | undefined,
    workspaceValue: workspace[key] as T | undefined,
    workspaceFolderValue: folder[key] as T | undefined,
  }),
});

describe('settings', () => {
  it('defaults when nothing is set', () => {
    assert.deepEqual(readSettings(reader({})), DEFAULTS);
  });
  it('clamps numbers the sidecar would reject (it takes unsigned integers)', () => {
    const s = readSettings(
      reader({ maxConcurrent: -3, sessionTtlMinutes: 2.7, requestTimeoutSeconds: 'soon', maxSessions: Number.NaN }),
    );
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
    assert.deepEqual(Object.keys(opts).sort(), [
      'backend',
      'force',
      'idleTimeoutSeconds',
      'maxConcurrent',
      'maxSessions',
      'requestTimeoutSeconds',
      'sessionTtlMinutes',
      'spares',
      'workspaceTrusted',
    ]);
    assert.equal(opts.force, true);
    assert.equal(opts.spares, 1, 'warm spares are on by default, one');
  });
  it('passes the backend through, unknown values falling back to auto', () => {
    assert.equal(sidecarOptions(readSettings(reader({})), true).backend, 'auto');
    assert.equal(sidecarOptions(readSettings(reader({ backend: 'print' })), true).backend, 'print');
    assert.equal(sidecarOptions(readSettings(reader({ backend: 'warp' })), true).backend, 'auto');
  });
  it('passes warm spares through, 0 turning them off, clamped', () => {
    assert.equal(sidecarOptions(readSettings(reader({ warmSpares: 0 })), true).spares, 0);
    assert.equal(sidecarOptions(readSettings(reader({ warmSpares: 99 })), true).spares, 4);
  });
  it('never forces in an untrusted workspace', () => {
    assert.equal(sidecarOptions(readSettings(reader({ allowUnattended: true })), false).force, false);
    assert.equal(sidecarOptions(readSettings(reader({})), true).force, false);
  });
  it('tells the sidecar whether the workspace is trusted (it enforces ask mode and a scratch folder too)', () => {
    const s = readSettings(reader({ allowUnattended: true }));
    assert.equal(sidecarOptions(s, true).workspaceTrusted, true);
    const untrusted = sidecarOptions(s, false);
    assert.equal(untrusted.workspaceTrusted, false);
    assert.equal(untrusted.force, false);
  });
  it('ignores workspace and folder values of the paths and of unattended mode', () => {
    const evil = { cliPath: '/repo/evil-agent', sidecarPath: '/repo/evil-bridge', allowUnattended: true };
    assert.deepEqual([...USER_ONLY_KEYS].sort(), Object.keys(evil).sort());
    for (const s of [
      readSettings(reader({}, evil)),
      readSettings(reader({}, {}, evil)),
      readSettings(reader({}, evil, evil)),
    ]) {
      assert.equal(s.cliPath, '');
      assert.equal(s.sidecarPath, '');
      assert.equal(s.allowUnattended, false);
    }
    const user = { cliPath: '/opt/cursor/agent', sidecarPath: '/opt/cursor-bridge', allowUnattended: false };
    const s = readSettings(reader(user, evil, evil));
    assert.equal(s.cliPath, '/opt/cursor/agent', 'the user value stands, whatever the workspace says');
    assert.equal(s.sidecarPath, '/opt/cursor-bridge');
    assert.equal(s.allowUnattended, false);
    assert.equal(readSettings(reader({ allowUnattended: true }, { allowUnattended: false })).allowUnattended, true);
  });
  it('tools: copilot by default; cursor only from the user’s settings, a workspace may only pick copilot', () => {
    assert.equal(readSettings(reader({})).tools, 'copilot');
    assert.equal(readSettings(reader({ tools: 'cursor' })).tools, 'cursor');
    assert.equal(readSettings(reader({ tools: 'mcp' })).tools, 'copilot', 'unknown values fall back');
    assert.equal(
      readSettings(reader({}, { tools: 'cursor' })).tools,
      'copilot',
      'a repository cannot switch the review off',
    );
    assert.equal(readSettings(reader({}, {}, { tools: 'cursor' })).tools, 'copilot', 'nor can a folder');
    assert.equal(
      readSettings(reader({ tools: 'cursor' }, { tools: 'copilot' })).tools,
      'copilot',
      'but it may switch it on',
    );
    assert.equal(readSettings(reader({ tools: 'cursor' }, {}, { tools: 'copilot' })).tools, 'copilot');
    assert.ok(
      !('tools' in sidecarOptions(readSettings(reader({ tools: 'cursor' })), true)),
      'per turn: not a sidecar option',
    );
  });
  it('still takes workspace values of the other settings', () => {
    const s = readSettings(reader({ maxConcurrent: 2 }, { maxConcurrent: 8, mode: 'ask' }));
    assert.equal(s.maxConcurrent, 8);
    assert.equal(s.mode, 'ask');
  });
  it('expands ~', () => {
    assert.equal(expandHome('~/bin/agent', '/home/dev'), '/home/dev/bin/agent');
    assert.equal(expandHome('~', '/home/dev'), '/home/dev');
    assert.equal(expandHome('/usr/bin/agent', '/home/dev'), '/usr/bin/agent');
    assert.equal(expandHome('a~/b', '/home/dev'), 'a~/b');
  });
});

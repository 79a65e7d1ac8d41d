// Check Setup's VS Code-only checks and its Markdown report (setup-check.ts).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { renderReport, sidecarItems, vscodeChecks, type HostFacts } from '../src/setup-check';

const signedOut: HostFacts = {
  trusted: true,
  byokUtilityModelDefault: undefined,
  utilityModel: undefined,
  agentHostByok: undefined,
  agentsWindow: undefined,
  githubSignedIn: false,
};
const status = (f: HostFacts) => Object.fromEntries(vscodeChecks(f).map((i) => [i.id, i.status]));

describe('vscodeChecks', () => {
  it('a fresh VS Code without Copilot: the utility model is the one thing to fix', () => {
    assert.deepEqual(status(signedOut), {
      restrictedMode: 'ok',
      utilityModel: 'warn',
      agentHostByok: 'info',
      agentsWindow: 'info',
      github: 'info',
    });
    const utility = vscodeChecks(signedOut).find((i) => i.id === 'utilityModel');
    assert.equal(utility?.action, 'utilityMainAgent');
    assert.match(utility?.fix ?? '', /mainAgent/);
  });
  it('each setting, once set, passes', () => {
    const done = {
      ...signedOut,
      byokUtilityModelDefault: 'mainAgent',
      agentHostByok: true,
      agentsWindow: { 'cursor-bridge.cursor-bridge': true },
    };
    assert.deepEqual(status(done), {
      restrictedMode: 'ok',
      utilityModel: 'ok',
      agentHostByok: 'ok',
      agentsWindow: 'ok',
      github: 'info',
    });
    const github = (f: HostFacts) => vscodeChecks(f).find((i) => i.id === 'github');
    assert.match(github(signedOut)?.fix ?? '', /Sign in to use GitHub Copilot.*close it.*send again/);
    assert.equal(github({ ...signedOut, githubSignedIn: true })?.fix, undefined);
    // The Copilot harness of the web build or of a remote window never reaches extension models.
    for (const window of [{ kind: 'web' as const }, { kind: 'remote' as const, name: 'ssh-remote' }]) {
      const item = vscodeChecks({ ...done, window }).find((i) => i.id === 'agentHostByok');
      assert.equal(item?.status, 'warn', window.kind);
      assert.match(item?.summary ?? '', /Cursor models are missing when "Copilot" is the session target/);
      assert.match(item?.fix ?? '', /"Local"/);
      assert.equal(item?.action, undefined, 'no setting fixes it');
    }
    assert.equal(status({ ...signedOut, utilityModel: 'cursor/composer-2.5' }).utilityModel, 'ok');
  });
  it('Restricted Mode and a bridge switched off are warnings with a fix', () => {
    const s = status({ ...signedOut, trusted: false, agentHostByok: false });
    assert.deepEqual([s.restrictedMode, s.agentHostByok], ['warn', 'warn']);
  });
  it('a GitHub sign-in is never required', () => {
    assert.ok(vscodeChecks({ ...signedOut, githubSignedIn: true }).every((i) => i.status !== 'fail'));
    assert.match(vscodeChecks(signedOut).find((i) => i.id === 'github')?.summary ?? '', /Not needed/);
  });
});

describe('sidecarItems', () => {
  it('a cliPath that points at nothing names the setting and the path, and offers the setting, not a reinstall', () => {
    // The sidecar's `cli` check for `initialize.cliPath` = /opt/nowhere/agent.
    const summary =
      'The Cursor CLI was not found at /opt/nowhere/agent, the path in the `cursorBridge.cliPath` setting (`--cli-path` on the command line).';
    const [cli] = sidecarItems({
      ok: false,
      checks: [
        {
          id: 'cli',
          title: 'Cursor CLI',
          status: 'fail',
          summary,
          fix: 'Fix the `cursorBridge.cliPath` setting (or `--cli-path`), or clear it to search PATH.',
        },
      ],
    });
    assert.equal(cli.action, 'cliPathSetting');
    const md = renderReport([{ title: 'Cursor CLI and the sidecar', items: [cli] }]);
    assert.match(md, /\/opt\/nowhere\/agent, the path in the `cursorBridge\.cliPath` setting/);
    assert.match(md, /\[Open the cursorBridge\.cliPath setting\]\(#fix-cliPathSetting\)/);
    assert.doesNotMatch(md, /#fix-installCli/);
    const missing = sidecarItems({
      ok: false,
      checks: [
        {
          id: 'cli',
          title: 'Cursor CLI',
          status: 'fail',
          summary: 'The Cursor CLI (`cursor-agent`) is not installed or not on PATH.',
        },
      ],
    });
    assert.equal(missing[0].action, 'installCli', 'nothing configured: install it');
  });
});

describe('renderReport', () => {
  it('lists every check with its mark, fix and fix link, and counts the problems', () => {
    const sidecar = sidecarItems({
      ok: false,
      checks: [
        { id: 'cli', title: 'Cursor CLI', status: 'ok', summary: 'Found at /x.' },
        {
          id: 'login',
          title: 'Cursor login',
          status: 'fail',
          summary: 'Not logged in, and no API key is set.',
          fix: 'Run `agent login`.',
        },
      ],
    });
    const md = renderReport([
      { title: 'Cursor CLI and the sidecar', items: sidecar },
      { title: 'VS Code', items: vscodeChecks(signedOut) },
      { title: 'Platform', items: [] },
    ]);
    assert.match(
      md,
      /^# Cursor Bridge: Check Setup\n\n\*\*1 problem to fix\*\* before Cursor models answer, and 1 warning\./,
    );
    assert.match(
      md,
      /- ✗ \*\*Cursor login:\*\* Not logged in, and no API key is set\.\n {2}- Fix: Run `agent login`\.\n {2}- \[Run `agent login` in a terminal\]\(#fix-login\)/,
    );
    assert.match(md, /- ✓ \*\*Cursor CLI:\*\* Found at \/x\.\n- ✗/);
    assert.match(md, /\(#fix-utilityMainAgent\)/);
    assert.doesNotMatch(md, /## Platform/, 'an empty section is left out');
  });
});

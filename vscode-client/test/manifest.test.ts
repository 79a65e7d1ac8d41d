// The extension's package.json (what VS Code reads) agrees with the code and the fixed names in
// vscode-client/README.md (commands, settings); docs/vscode-provider.md §2 has the contribution and
// engines rules, §12 the untrusted-workspace ones.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { Command } from '../src/commands';
import { VENDOR } from '../src/extension';
import { DEFAULTS, LOG_LEVELS, RESTART_KEYS, SECTION, TOOL_OWNERS, USER_ONLY_KEYS } from '../src/settings';
import { PACKAGE_ROOT } from './helpers';

interface Manifest {
  name: string;
  publisher: string;
  main: string;
  engines: { vscode: string };
  activationEvents: string[];
  capabilities: { untrustedWorkspaces: { supported: string; restrictedConfigurations: string[] } };
  contributes: {
    languageModelChatProviders: { vendor: string; displayName: string }[];
    commands: { command: string; title: string }[];
    configuration: {
      properties: Record<
        string,
        {
          type: string;
          default: unknown;
          scope?: string;
          enum?: string[];
          description?: string;
          markdownDescription?: string;
        }
      >;
    };
  };
  devDependencies: Record<string, string>;
}

const manifest = JSON.parse(fs.readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as Manifest;

describe('package.json', () => {
  it('contributes the cursor vendor', () => {
    assert.deepEqual(manifest.contributes.languageModelChatProviders, [{ vendor: VENDOR, displayName: 'Cursor' }]);
    assert.equal(VENDOR, 'cursor');
  });
  it('targets VS Code ^1.104.0 with matching types', () => {
    assert.equal(manifest.engines.vscode, '^1.104.0');
    assert.match(manifest.devDependencies['@types/vscode'], /^1\.104\./);
  });
  it('activates without waiting for anything heavy', () => {
    assert.deepEqual(manifest.activationEvents, ['onStartupFinished']);
    assert.equal(manifest.main, './out/extension.js');
  });
  it('contributes the commands, titled "Cursor Bridge: …"', () => {
    const contributed = manifest.contributes.commands.map((c) => c.command).sort();
    assert.deepEqual(contributed, Object.values(Command).sort());
    for (const c of manifest.contributes.commands) assert.match(c.title, /^Cursor Bridge: [A-Z]/);
  });
  it('declares every setting with the code’s default and a description', () => {
    const props = manifest.contributes.configuration.properties;
    assert.deepEqual(
      Object.keys(props).sort(),
      Object.keys(DEFAULTS)
        .map((k) => `${SECTION}.${k}`)
        .sort(),
    );
    for (const [key, value] of Object.entries(DEFAULTS)) {
      const p = props[`${SECTION}.${key}`];
      assert.deepEqual(p.default, value, key);
      assert.ok((p.markdownDescription ?? p.description ?? '').length > 20, `${key} has a description`);
    }
    assert.deepEqual(props['cursorBridge.mode'].enum, ['auto', 'agent', 'ask', 'plan']);
    assert.deepEqual(props['cursorBridge.logLevel'].enum, [...LOG_LEVELS]);
    assert.deepEqual(props['cursorBridge.tools'].enum, [...TOOL_OWNERS]);
    for (const k of RESTART_KEYS) assert.ok(`${SECTION}.${k}` in props, k);
  });
  it('lets no workspace choose the programs run or turn on unattended mode (setting scopes)', () => {
    const props = manifest.contributes.configuration.properties;
    assert.equal(props['cursorBridge.cliPath'].scope, 'machine');
    assert.equal(props['cursorBridge.sidecarPath'].scope, 'machine');
    // Application, like chat.tools.autoApprove: not even a dev container's machine settings.
    assert.equal(props['cursorBridge.allowUnattended'].scope, 'application');
    assert.match(props['cursorBridge.allowUnattended'].markdownDescription ?? '', /application scope/);
    for (const k of USER_ONLY_KEYS)
      assert.ok(['machine', 'application'].includes(props[`${SECTION}.${k}`].scope ?? ''), k);
  });
  it('supports untrusted workspaces in a limited way, restricting the executable paths', () => {
    assert.equal(manifest.capabilities.untrustedWorkspaces.supported, 'limited');
    assert.deepEqual(manifest.capabilities.untrustedWorkspaces.restrictedConfigurations.sort(), [
      'cursorBridge.cliPath',
      'cursorBridge.sidecarPath',
    ]);
  });
});

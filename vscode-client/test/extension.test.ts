// extension.ts's reading of the host (the `vscode` stub): what the sidecar is started with, and
// which folder a turn runs in. No sidecar binary needed: the one configured here does not exist.
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { afterEach, describe, it } from 'node:test';
import type * as vscode from 'vscode';
import { activate, deactivate, launchConfig } from '../src/extension';
import type { CursorChatProvider } from '../src/provider';
import { channelLines, fakeContext, memoryLog, until } from './helpers';
import * as stub from './vscode-stub';

const folder = (fsPath: string, scheme = 'file') => ({ uri: { fsPath, scheme } });

function reset(): void {
  delete process.env.CURSOR_BRIDGE_SIDECAR_PATH;
  Object.assign(stub.stubState, {
    isTrusted: true,
    workspaceFolders: [],
    config: {},
    workspaceConfig: {},
    activeDocument: undefined,
  });
}

const context = () => fakeContext('/nonexistent/extension') as unknown as vscode.ExtensionContext;

describe('launchConfig (what initialize carries)', () => {
  afterEach(reset);

  it('sends every local folder of a multi-root workspace', async () => {
    reset();
    stub.stubState.config = { 'cursorBridge.sidecarPath': '/opt/cursor-bridge' };
    stub.stubState.workspaceFolders = [
      folder('/home/dev/api'),
      folder('/remote/x', 'vscode-remote'),
      folder('/home/dev/web'),
    ];
    const config = await launchConfig(context(), memoryLog());
    assert.deepEqual(config.initialize.workspaceFolders, ['/home/dev/api', '/home/dev/web']);
    assert.equal(config.binary, '/opt/cursor-bridge');
  });

  it('sends workspaceTrusted: false in an untrusted workspace, and no --force even with allowUnattended', async () => {
    reset();
    stub.stubState.isTrusted = false;
    stub.stubState.config = { 'cursorBridge.sidecarPath': '/opt/cursor-bridge', 'cursorBridge.allowUnattended': true };
    const untrusted = await launchConfig(context(), memoryLog());
    assert.equal(untrusted.initialize.options?.workspaceTrusted, false);
    assert.equal(untrusted.initialize.options?.force, false);
    // Read fresh at each start: after a trust grant (which restarts the sidecar) it says trusted.
    stub.grantWorkspaceTrust();
    const trusted = await launchConfig(context(), memoryLog());
    assert.equal(trusted.initialize.options?.workspaceTrusted, true);
    assert.equal(trusted.initialize.options?.force, true);
  });

  it('takes neither the binaries nor unattended mode from workspace settings', async () => {
    reset();
    stub.stubState.config = { 'cursorBridge.sidecarPath': '/opt/cursor-bridge' };
    stub.stubState.workspaceConfig = {
      'cursorBridge.sidecarPath': '/repo/evil-bridge',
      'cursorBridge.cliPath': '/repo/evil-agent',
      'cursorBridge.allowUnattended': true,
    };
    const config = await launchConfig(context(), memoryLog());
    assert.equal(config.binary, '/opt/cursor-bridge');
    assert.equal(config.initialize.cliPath, undefined);
    assert.equal(config.initialize.options?.force, false);
  });
});

describe('the activated extension picks each turn’s folder', () => {
  afterEach(async () => {
    await deactivate();
    reset();
  });

  it('runs the turn in the folder of the active editor’s file, else the first folder', async () => {
    reset();
    stub.stubState.config = { 'cursorBridge.sidecarPath': path.join('/nonexistent', 'cursor-bridge') };
    stub.stubState.workspaceFolders = [folder('/home/dev/api'), folder('/home/dev/web')];
    activate(context());
    const provider = stub.stubState.providers.get('cursor') as CursorChatProvider;
    const token = new stub.CancellationTokenSource().token as vscode.CancellationToken;
    const ask = async (conversation: string) => {
      const messages = [{ role: 1, name: undefined, content: [new stub.LanguageModelTextPart('hi')] }];
      const options = {
        toolMode: 1,
        modelOptions: { _conversationId: conversation },
      } as unknown as vscode.ProvideLanguageModelChatResponseOptions;
      const model = {
        id: 'auto',
        name: 'Auto',
        family: 'auto',
        version: 'auto',
        maxInputTokens: 1,
        maxOutputTokens: 1,
        capabilities: {},
      };
      // The sidecar is missing: the turn is logged, then explained as the answer.
      await provider.provideLanguageModelChatResponse(
        model,
        messages as never,
        options,
        { report: () => undefined },
        token,
      );
    };
    stub.stubState.activeDocument = { fsPath: '/home/dev/web/src/app.ts', scheme: 'file' };
    await ask('c1');
    await until('the turn log line', () => channelLines().some((l) => /turn .*conversation c1/.test(l)));
    assert.ok(
      channelLines().some((l) => /turn .*, in \/home\/dev\/web, conversation c1/.test(l)),
      channelLines().join('\n'),
    );
    stub.stubState.activeDocument = { fsPath: '/untitled-1', scheme: 'untitled' };
    await ask('c2');
    assert.ok(
      channelLines().some((l) => /turn .*, in \/home\/dev\/api, conversation c2/.test(l)),
      channelLines().join('\n'),
    );
  });
});

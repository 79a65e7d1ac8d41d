// Callbacks nobody awaits (event handlers, notifications, timers, fire-and-forget calls): a
// rejection there must end up in the log, never as an unhandled rejection (which the extension
// host reports as an error of the extension, or Node turns into a crash).
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type * as vscode from 'vscode';
import { detached, SidecarManager } from '../src/sidecar-manager';
import { toBridgeError } from '../src/errors';
import { activate, deactivate } from '../src/extension';
import { ModelCatalog } from '../src/models';
import type { ModelInfo } from '../src/protocol';
import { channelLines, fakeContext, memoryLog, unhandledRejectionsDuring, until } from './helpers';
import * as stub from './vscode-stub';

const model: ModelInfo = {
  id: 'auto',
  name: 'Auto',
  family: 'auto',
  maxInputTokens: 200_000,
  maxOutputTokens: 32_768,
  capabilities: { thinking: false, toolCalling: true, imageInput: false },
  isDefault: true,
};

let dir: string;
before(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cursor-bridge-rejections-'));
});
after(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('unhandled rejections', () => {
  it('detached() logs a rejecting or throwing callback instead of leaving it unhandled', async () => {
    const log = memoryLog();
    const seen = await unhandledRejectionsDuring(async () => {
      detached(log, 'the async one', () => Promise.reject(new Error('async boom')));
      detached(log, 'the sync one', () => {
        throw new Error('sync boom');
      });
      detached(log, 'the fine one', () => 42);
    });
    assert.deepEqual(seen, []);
    assert.ok(log.lines.includes('error: the async one failed: async boom'), log.lines.join('\n'));
    assert.ok(log.lines.includes('error: the sync one failed: sync boom'), log.lines.join('\n'));
    assert.equal(log.lines.length, 2);
  });

  it(
    'the sidecar manager logs a rejecting onGaveUp (the crash notification is async)',
    { skip: process.platform === 'win32' && 'needs a shell script' },
    async () => {
      // Passes the `--version` check, then dies before answering `initialize`: a crash at start.
      const fake = path.join(dir, 'dies-at-start.sh');
      fs.writeFileSync(
        fake,
        '#!/bin/sh\nif [ "$1" = "--version" ]; then echo "cursor-bridge 0.0.0-test"; exit 0; fi\nexit 3\n',
        { mode: 0o755 },
      );
      const log = memoryLog();
      let gaveUp = 0;
      const m = new SidecarManager({
        log,
        launchConfig: async () => ({
          binary: fake,
          env: process.env,
          initialize: { protocolVersion: 1, workspaceFolders: [] },
        }),
        onGaveUp: async () => {
          gaveUp++;
          throw new Error('the notification failed');
        },
        crashLimit: 1,
      });
      const seen = await unhandledRejectionsDuring(async () => {
        await assert.rejects(m.request('models/list', {}), (e: unknown) => toBridgeError(e).kind === 'sidecarCrashed');
        await until('giving up', () => gaveUp === 1);
      });
      await m.dispose();
      assert.deepEqual(seen, []);
      assert.ok(
        log.lines.some((l) => l === 'error: reporting the crashed sidecar failed: the notification failed'),
        log.lines.join('\n'),
      );
    },
  );

  it('the model catalog logs a failure to store the list (globalState.update is not awaited)', async () => {
    const log = memoryLog();
    const store = { get: () => undefined, update: () => Promise.reject(new Error('disk full')) };
    const catalog = new ModelCatalog(
      async () => [model],
      () => undefined,
      { store, log },
    );
    const seen = await unhandledRejectionsDuring(async () => {
      await catalog.load(false);
      catalog.replace([{ ...model, id: 'other' }]); // the models/changed notification's path
    });
    assert.deepEqual(seen, []);
    assert.equal(
      log.lines.filter((l) => l === 'warn: could not store the model list: disk full').length,
      2,
      log.lines.join('\n'),
    );
    assert.equal(catalog.peek()[0].id, 'other', 'the list is still used');
  });

  it('the extension logs a set-up notification that fails (the model fetcher does not await it)', async () => {
    delete process.env.CURSOR_BRIDGE_SIDECAR_PATH;
    stub.stubState.workspaceFolders = [{ uri: { fsPath: path.join(dir, 'ws'), scheme: 'file' } }];
    stub.stubState.config = { 'cursorBridge.sidecarPath': path.join(dir, 'no-such-sidecar') };
    const original = stub.window.showWarningMessage;
    stub.window.showWarningMessage = () => Promise.reject(new Error('the window is gone'));
    try {
      const seen = await unhandledRejectionsDuring(async () => {
        // Activation warms up at once: models/list → sidecarNotFound → the warning, which rejects.
        activate(fakeContext(path.join(dir, 'extension')) as unknown as vscode.ExtensionContext);
        await until('the failure to be logged', () =>
          channelLines().some((l) => l.includes('announcing a set-up problem failed')),
        );
      });
      assert.deepEqual(seen, []);
      assert.ok(
        channelLines().some((l) => l === 'error: announcing a set-up problem failed: the window is gone'),
        channelLines().join('\n'),
      );
    } finally {
      stub.window.showWarningMessage = original;
      await deactivate();
    }
  });
});

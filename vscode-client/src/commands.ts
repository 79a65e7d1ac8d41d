// The commands (Check Setup's report lives in setup-check.ts). Their failures are shown as notifications with the table's texts (errors.ts),
// never the sidecar's raw messages; the log has the details.

import * as vscode from 'vscode';
import { plainMessage, toBridgeError } from './errors';
import type { ModelCatalog } from './models';
import { Request, type DoctorResult } from './protocol';
import { applyFix, FIX_LABELS, showCheckSetup, type FixId, type SetupItem } from './setup-check';
import type { SidecarManager } from './sidecar-manager';

export const Command = {
  refreshModels: 'cursorBridge.refreshModels',
  clearSessions: 'cursorBridge.clearSessions',
  showLogs: 'cursorBridge.showLogs',
  restartSidecar: 'cursorBridge.restartSidecar',
  setApiKey: 'cursorBridge.setApiKey',
  checkSetup: 'cursorBridge.checkSetup',
} as const;

/** Commands not in the palette: the walkthrough's and the report's fix links (`cursorBridge.fix?["login"]`). */
export const InternalCommand = {
  fix: 'cursorBridge.fix',
} as const;

/** Where the API key lives in SecretStorage (never in settings). */
export const API_KEY_SECRET = 'cursorBridge.apiKey';

export interface CommandDeps {
  sidecar: SidecarManager;
  catalog: ModelCatalog;
  log: vscode.LogOutputChannel;
  secrets: vscode.SecretStorage;
  onDoctor?(report: DoctorResult): void;
  /** the platform report's items for Check Setup (setup-check.ts). */
  platformReport?(): SetupItem[] | Promise<SetupItem[]>;
}

export async function showFailure(log: vscode.LogOutputChannel, what: string, e: unknown): Promise<void> {
  const err = toBridgeError(e);
  log.error(`${what} failed: ${err.kind}: ${err.message}${err.detail ? ` | ${err.detail}` : ''}`);
  const pick = await vscode.window.showErrorMessage(plainMessage(err.kind), 'Show Logs');
  if (pick === 'Show Logs') log.show();
}

export function registerCommands(d: CommandDeps): vscode.Disposable[] {
  const { sidecar, catalog, log, secrets } = d;
  return [
    vscode.commands.registerCommand(Command.refreshModels, async () => {
      try {
        const models = await vscode.window.withProgress(
          { location: vscode.ProgressLocation.Notification, title: 'Cursor Bridge: asking the Cursor CLI for models…' },
          () => catalog.load(true),
        );
        void vscode.window.showInformationMessage(`Cursor Bridge: ${models.length} Cursor models available.`);
      } catch (e) {
        await showFailure(log, 'refreshing models', e);
      }
    }),
    vscode.commands.registerCommand(Command.clearSessions, async () => {
      try {
        const { cleared } = await sidecar.request(Request.sessionsClear, {});
        void vscode.window.showInformationMessage(
          `Cursor Bridge: cleared ${cleared} session${cleared === 1 ? '' : 's'} of this window; the next message of one of its chats starts a new Cursor chat.`,
        );
      } catch (e) {
        await showFailure(log, 'clearing sessions', e);
      }
    }),
    vscode.commands.registerCommand(Command.showLogs, () => log.show()),
    vscode.commands.registerCommand(Command.restartSidecar, async () => {
      try {
        await sidecar.restart('Restart Sidecar command', true);
        void vscode.window.showInformationMessage('Cursor Bridge: sidecar restarted.');
      } catch (e) {
        await showFailure(log, 'restarting the sidecar', e);
      }
    }),
    vscode.commands.registerCommand(Command.checkSetup, async () => {
      try {
        return await showCheckSetup({
          doctor: () => sidecar.request(Request.doctor, undefined),
          probe: (spend) => sidecar.request(Request.probe, { spend }),
          log,
          run: (c, ...args) => vscode.commands.executeCommand(c, ...args),
          onDoctor: d.onDoctor,
          platformReport: d.platformReport,
        });
      } catch (e) {
        await showFailure(log, 'checking the set-up', e);
        return undefined;
      }
    }),
    vscode.commands.registerCommand(InternalCommand.fix, async (id: unknown) => {
      if (typeof id === 'string' && id in FIX_LABELS)
        await applyFix(id as FixId, (c, ...args) => vscode.commands.executeCommand(c, ...args));
    }),
    vscode.commands.registerCommand(Command.setApiKey, async () => {
      const value = await vscode.window.showInputBox({
        title: 'Cursor Bridge: Set API Key',
        prompt:
          'A Cursor API key (Cursor dashboard → Integrations). It is kept in VS Code’s secret storage. Leave empty to remove the stored key.',
        password: true,
        ignoreFocusOut: true,
      });
      if (value === undefined) return; // dismissed
      const key = value.trim();
      if (key) await secrets.store(API_KEY_SECRET, key);
      else await secrets.delete(API_KEY_SECRET);
      log.info(key ? 'API key stored' : 'API key removed');
      // The key only reaches the sidecar through `initialize`.
      sidecar.restartSoon(key ? 'API key changed' : 'API key removed');
      void vscode.window.showInformationMessage(
        key ? 'Cursor Bridge: API key stored.' : 'Cursor Bridge: API key removed.',
      );
    }),
  ];
}

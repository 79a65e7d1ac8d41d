// Wiring: the log channel, the sidecar manager, the model catalog, the provider and the commands,
// and the events that restart the sidecar. Activation does not wait for the sidecar: it starts in
// the background (and on the first request that needs it).

import * as os from 'node:os';
import * as vscode from 'vscode';
import { locateSidecar } from './bootstrap';
import { API_KEY_SECRET, Command, registerCommands } from './commands';
import { detached, restartOnChanges, SidecarManager, type LaunchConfig } from './sidecar-manager';
import { plainMessage, toBridgeError, type BridgeError, type FailureKind } from './errors';
import { turnWorkspace } from './folders';
import { ModelCatalog } from './models';
import { platformReport } from './platform';
import { PROTOCOL_VERSION, Request } from './protocol';
import { CursorChatProvider } from './provider';
import { expandHome, readSettings, SECTION, sidecarOptions, type Settings } from './settings';
import { dataPartCtor, thinkingPartCtor } from './optional-parts';
import { TokenCounter } from './tokens';

export const VENDOR = 'cursor';

let sidecar: SidecarManager | undefined;

/** What the extension returns from `activate`, for tests in a real VS Code. */
export interface CursorBridgeApi {
  readonly sidecarPid: number | undefined;
}

function settings(): Settings {
  return readSettings(vscode.workspace.getConfiguration(SECTION));
}

/** The workspace's local folders: all of them go to `initialize`, one to each `chat/send`. */
function localFolders(): string[] {
  return (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === 'file').map((f) => f.uri.fsPath);
}

/** This turn's folder: the one holding the active editor's file, else the first. */
function currentFolder(): string | undefined {
  const uri = vscode.window.activeTextEditor?.document.uri;
  return turnWorkspace(localFolders(), uri?.scheme === 'file' ? uri.fsPath : undefined);
}

/**
 * What the sidecar is started with, read fresh at every start (settings, trust, folders, API key);
 * the events that change any of it restart the sidecar (`restartOnChanges`).
 */
export async function launchConfig(
  context: Pick<vscode.ExtensionContext, 'extensionPath' | 'extensionMode' | 'secrets'>,
  log: Pick<vscode.LogOutputChannel, 'debug' | 'info' | 'warn' | 'error' | 'trace'>,
): Promise<LaunchConfig> {
  const s = settings();
  const home = os.homedir();
  const binary = locateSidecar(
    {
      setting: expandHome(s.sidecarPath, home),
      extensionPath: context.extensionPath,
      development: context.extensionMode !== vscode.ExtensionMode.Production,
    },
    log,
  );
  const apiKey = await context.secrets.get(API_KEY_SECRET);
  const cliPath = s.cliPath ? expandHome(s.cliPath, home) : undefined;
  return {
    binary,
    env: { ...process.env, CURSOR_BRIDGE_LOG: s.logLevel },
    initialize: {
      protocolVersion: PROTOCOL_VERSION,
      clientInfo: { name: vscode.env.appName, version: vscode.version },
      workspaceFolders: localFolders(),
      ...(cliPath ? { cliPath } : {}),
      ...(apiKey ? { apiKey } : {}),
      options: sidecarOptions(s, vscode.workspace.isTrusted),
    },
  };
}

/**
 * Context keys the walkthrough's steps complete on (package.json `walkthroughs`). They are pulsed,
 * not left set: VS Code's walkthrough service (1.139) completes an `onContext` step only when the
 * expression *becomes* true while the service runs, and one that is already true when the service
 * starts (lazily, when a walkthrough is first shown) is never completed in that window. So each key
 * is true for a moment whenever its condition is seen (each model list, each turn) and false
 * otherwise; a step, once completed, stays completed (VS Code stores it).
 */
export const CONTEXT = {
  cliFound: 'cursorBridge.cliFound',
  signedIn: 'cursorBridge.signedIn',
  modelUsed: 'cursorBridge.modelUsed',
  answered: 'cursorBridge.answered',
} as const;

const PULSE_MS = 1500;
const pulses = new Map<string, ReturnType<typeof setTimeout>>();

function setContext(key: string): void {
  void vscode.commands.executeCommand('setContext', key, true);
  clearTimeout(pulses.get(key));
  const timer = setTimeout(() => void vscode.commands.executeCommand('setContext', key, false), PULSE_MS);
  (timer as { unref?: () => void }).unref?.();
  pulses.set(key, timer);
}

/** Problems a person must fix before any Cursor model works; each is announced once per window. */
const SETUP_PROBLEMS: ReadonlySet<FailureKind> = new Set<FailureKind>([
  'cliNotFound',
  'authRequired',
  'sidecarNotFound',
]);

export function activate(context: vscode.ExtensionContext): CursorBridgeApi {
  const log = vscode.window.createOutputChannel('Cursor Bridge', { log: true });
  const modelsChanged = new vscode.EventEmitter<void>();
  const announced = new Set<FailureKind>();

  const announce = async (err: BridgeError) => {
    if (!SETUP_PROBLEMS.has(err.kind) || announced.has(err.kind)) return;
    announced.add(err.kind);
    const fix = err.kind === 'authRequired' ? 'Set API Key' : 'Open Settings';
    const pick = await vscode.window.showWarningMessage(plainMessage(err.kind), fix, 'Show Logs');
    if (pick === 'Set API Key') await vscode.commands.executeCommand(Command.setApiKey);
    else if (pick === 'Open Settings') await vscode.commands.executeCommand('workbench.action.openSettings', SECTION);
    else if (pick === 'Show Logs') log.show();
  };

  const manager = new SidecarManager({
    log,
    launchConfig: () => launchConfig(context, log),
    onGaveUp: async (crashes) => {
      const pick = await vscode.window.showErrorMessage(
        `Cursor Bridge: the sidecar crashed ${crashes} times within 3 minutes and was stopped, so Cursor models do not answer. See the log for why.`,
        'Show Logs',
        'Restart Sidecar',
      );
      if (pick === 'Show Logs') log.show();
      else if (pick === 'Restart Sidecar') await vscode.commands.executeCommand(Command.restartSidecar);
    },
    onReady: () => {
      // Another CLI path or API key can mean other models.
      catalog.invalidate();
      catalog.load(false).catch(() => undefined);
    },
    onModelsChanged: (models) => catalog.replace(models),
  });
  sidecar = manager;

  const catalog = new ModelCatalog(
    async (refresh) => {
      try {
        const models = (await manager.request(Request.modelsList, { refresh })).models;
        // Listing models needs the CLI and a login (or key): both walkthrough steps are done.
        setContext(CONTEXT.cliFound);
        setContext(CONTEXT.signedIn);
        return models;
      } catch (e) {
        const err = toBridgeError(e);
        if (err.kind === 'authRequired') setContext(CONTEXT.cliFound);
        log.warn(`models/list failed: ${err.kind}: ${err.message}${err.hint ? ` | hint: ${err.hint}` : ''}`);
        detached(log, 'announcing a set-up problem', () => announce(err));
        throw err;
      }
    },
    () => modelsChanged.fire(),
    { store: context.globalState, log },
  );

  const provider = new CursorChatProvider({
    bridge: manager,
    catalog,
    onDidChangeModels: modelsChanged.event,
    tokens: new TokenCounter(),
    settings,
    trusted: () => vscode.workspace.isTrusted,
    workspace: currentFolder,
    log,
    thinkingPart: thinkingPartCtor,
    dataPart: dataPartCtor,
    onTurn: (phase) => setContext(phase === 'started' ? CONTEXT.modelUsed : CONTEXT.answered),
  });

  context.subscriptions.push(
    log,
    modelsChanged,
    vscode.lm.registerLanguageModelChatProvider(VENDOR, provider),
    ...registerCommands({
      sidecar: manager,
      catalog,
      log,
      secrets: context.secrets,
      onDoctor: (report) => {
        const passed = (id: string) => report.checks.some((c) => c.id === id && c.status === 'ok');
        if (passed('cli')) setContext(CONTEXT.cliFound);
        if (passed('login')) setContext(CONTEXT.signedIn);
      },
      // Whether this VSIX's sidecar matches the machine (an x64 build under Rosetta, say).
      platformReport: () => {
        const r = platformReport(context.extensionPath);
        return [
          {
            id: 'platform',
            title: 'Sidecar build',
            status: r.ok ? 'ok' : 'warn',
            summary: r.message,
            fix: r.fix || undefined,
          },
        ];
      },
    }),
    ...restartOnChanges(manager, vscode.workspace, context.secrets, API_KEY_SECRET),
  );

  log.info(`Cursor Bridge ${String(context.extension.packageJSON.version)} activated (VS Code ${vscode.version})`);
  // Warm up in the background: start the sidecar and fill the model list, so the first chat does
  // not wait for either. Failures are logged (and set-up problems announced) by the fetcher.
  catalog.peek();

  return {
    get sidecarPid() {
      return manager.pid;
    },
  };
}

export async function deactivate(): Promise<void> {
  await sidecar?.dispose();
  sidecar = undefined;
}

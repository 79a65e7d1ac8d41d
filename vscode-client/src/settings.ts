// `cursorBridge.*` settings, read into one typed object. Values are clamped here because the
// sidecar rejects an `initialize` with a negative or fractional number (its fields are unsigned
// integers), and a sidecar that cannot initialize would leave the person with no models at all.

import type { Options } from './protocol';
import type { ModeSetting } from './mode';

export const SECTION = 'cursorBridge';

export const LOG_LEVELS = ['off', 'error', 'warn', 'info', 'debug', 'trace'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** How the sidecar runs turns: Cursor's ACP mode (warm sessions), print mode, or ACP with print mode as the fallback. */
export const BACKENDS = ['auto', 'acp', 'print'] as const;
export type BackendSetting = (typeof BACKENDS)[number];

/**
 * Whose tools run a turn's actions: `copilot` (VS Code's tools, which the model calls through the
 * sidecar; Cursor's own are switched off) or `cursor` (the CLI runs its own tools in the workspace).
 */
export const TOOL_OWNERS = ['copilot', 'cursor'] as const;
export type ToolsSetting = (typeof TOOL_OWNERS)[number];

export interface Settings {
  cliPath: string;
  sidecarPath: string;
  mode: ModeSetting;
  sessionTtlMinutes: number;
  maxSessions: number;
  requestTimeoutSeconds: number;
  idleTimeoutSeconds: number;
  maxConcurrent: number;
  warmSpares: number;
  backend: BackendSetting;
  tools: ToolsSetting;
  allowUnattended: boolean;
  showToolActivity: boolean;
  utilityModel: string;
  logLevel: LogLevel;
}

export const DEFAULTS: Readonly<Settings> = {
  cliPath: '',
  sidecarPath: '',
  mode: 'auto',
  sessionTtlMinutes: 7 * 24 * 60,
  maxSessions: 50,
  requestTimeoutSeconds: 300,
  idleTimeoutSeconds: 60,
  maxConcurrent: 4,
  warmSpares: 1,
  backend: 'auto',
  tools: 'copilot',
  allowUnattended: false,
  showToolActivity: true,
  utilityModel: '',
  logLevel: 'info',
};

/** Settings that reach the sidecar (argv, env or `initialize`): changing one restarts it. */
export const RESTART_KEYS: readonly (keyof Settings)[] = [
  'cliPath',
  'sidecarPath',
  'sessionTtlMinutes',
  'maxSessions',
  'requestTimeoutSeconds',
  'idleTimeoutSeconds',
  'maxConcurrent',
  'warmSpares',
  'backend',
  'allowUnattended',
  'logLevel',
];

/** The part of `vscode.WorkspaceConfiguration` used here. */
export interface ConfigReader {
  get<T>(key: string): T | undefined;
  inspect<T>(
    key: string,
  ): { defaultValue?: T; globalValue?: T; workspaceValue?: T; workspaceFolderValue?: T } | undefined;
}

/**
 * Settings a repository must not choose: the programs the extension runs, and unattended agent
 * mode. package.json scopes them to the machine or the application, so VS Code does not apply a
 * workspace's value; they are read here without `workspaceValue` and `workspaceFolderValue` as
 * well, in case a VS Code version or a remote set-up still surfaces one through `get()`.
 */
export const USER_ONLY_KEYS = [
  'cliPath',
  'sidecarPath',
  'allowUnattended',
] as const satisfies readonly (keyof Settings)[];

/** The user's (or the remote machine's) value, else the default; workspace values never count. */
function userValue(config: ConfigReader, key: (typeof USER_ONLY_KEYS)[number]): unknown {
  const i = config.inspect<unknown>(key);
  return i?.globalValue ?? i?.defaultValue;
}

/**
 * `cursorBridge.tools`. `cursor` gives up VS Code's review of edits and confirmation of commands,
 * so only the user's (or the remote machine's) settings can choose it; a workspace may only choose
 * the reviewed `copilot`.
 */
function toolsSetting(config: ConfigReader): ToolsSetting {
  const i = config.inspect<unknown>('tools');
  if ((i?.workspaceFolderValue ?? i?.workspaceValue) === 'copilot') return 'copilot';
  return oneOf(i?.globalValue ?? i?.defaultValue, TOOL_OWNERS, DEFAULTS.tools);
}

function str(v: unknown, fallback: string): string {
  return typeof v === 'string' ? v.trim() : fallback;
}

function int(v: unknown, fallback: number, min: number, max: number): number {
  if (typeof v !== 'number' || !Number.isFinite(v)) return fallback;
  return Math.min(max, Math.max(min, Math.floor(v)));
}

function oneOf<T extends string>(v: unknown, allowed: readonly T[], fallback: T): T {
  return typeof v === 'string' && (allowed as readonly string[]).includes(v) ? (v as T) : fallback;
}

export function readSettings(config: ConfigReader): Settings {
  const d = DEFAULTS;
  return {
    cliPath: str(userValue(config, 'cliPath'), d.cliPath),
    sidecarPath: str(userValue(config, 'sidecarPath'), d.sidecarPath),
    mode: oneOf<ModeSetting>(config.get('mode'), ['auto', 'agent', 'ask', 'plan'], d.mode),
    sessionTtlMinutes: int(config.get('sessionTtlMinutes'), d.sessionTtlMinutes, 1, 90 * 24 * 60),
    maxSessions: int(config.get('maxSessions'), d.maxSessions, 1, 10_000),
    requestTimeoutSeconds: int(config.get('requestTimeoutSeconds'), d.requestTimeoutSeconds, 10, 24 * 3600),
    idleTimeoutSeconds: int(config.get('idleTimeoutSeconds'), d.idleTimeoutSeconds, 5, 24 * 3600),
    maxConcurrent: int(config.get('maxConcurrent'), d.maxConcurrent, 1, 64),
    warmSpares: int(config.get('warmSpares'), d.warmSpares, 0, 4),
    backend: oneOf(config.get('backend'), BACKENDS, d.backend),
    tools: toolsSetting(config),
    allowUnattended: userValue(config, 'allowUnattended') === true,
    showToolActivity: config.get('showToolActivity') !== false,
    utilityModel: str(config.get('utilityModel'), d.utilityModel),
    logLevel: oneOf(config.get('logLevel'), LOG_LEVELS, d.logLevel),
  };
}

/**
 * `initialize.options`. Unattended agent runs need a trusted workspace as well as the setting; the
 * trust itself goes along too, so the sidecar enforces it as well (ask mode, a scratch folder).
 */
export function sidecarOptions(s: Settings, trusted: boolean): Options {
  return {
    requestTimeoutSeconds: s.requestTimeoutSeconds,
    idleTimeoutSeconds: s.idleTimeoutSeconds,
    maxConcurrent: s.maxConcurrent,
    sessionTtlMinutes: s.sessionTtlMinutes,
    maxSessions: s.maxSessions,
    spares: s.warmSpares,
    backend: s.backend,
    force: s.allowUnattended && trusted,
    workspaceTrusted: trusted,
  };
}

/** `~/…` → the home folder; the sidecar and spawn() take paths literally. */
export function expandHome(p: string, home: string): string {
  if (p === '~') return home;
  if (p.startsWith('~/') || p.startsWith('~\\')) return home + p.slice(1);
  return p;
}

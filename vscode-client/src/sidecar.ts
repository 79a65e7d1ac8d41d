// The `cursor-bridge` sidecar's lifecycle: find the binary, check it, start it, `initialize` it,
// route its `chat/delta` notifications, restart it after a crash (up to a limit), and stop it
// cleanly. No vscode import: the extension passes in what it needs, so this runs (and is tested)
// in plain Node against the real binary.

import { execFile, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as readline from 'node:readline';
import {
  CancellationTokenSource,
  createMessageConnection,
  StreamMessageReader,
  StreamMessageWriter,
  type MessageConnection,
} from 'vscode-jsonrpc/node';
import { BridgeError, toBridgeError } from './errors';
import {
  Notification,
  PROTOCOL_VERSION,
  Request,
  type ChatDelta,
  type InitializeParams,
  type InitializeResult,
  type Method,
  type ModelInfo,
  type ModelsListResult,
  type Requests,
} from './protocol';

/** The log methods used here; `vscode.LogOutputChannel` has them all. */
export interface Logger {
  trace(message: string): void;
  debug(message: string): void;
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

/** What a request can be cancelled with; `vscode.CancellationToken` fits. */
export interface CancellationLike {
  readonly isCancellationRequested: boolean;
  onCancellationRequested(listener: () => void): { dispose(): unknown };
}

export interface DisposableLike {
  dispose(): void;
}

/** What the provider and commands need from the sidecar; tests substitute a fake. */
export interface Bridge {
  request<M extends Method>(method: M, params: Requests[M]['params'], token?: CancellationLike): Promise<Requests[M]['result']>;
  /** Receive this turn's `chat/delta` notifications until disposed. */
  onDelta(turnId: string, handler: (delta: ChatDelta) => void): DisposableLike;
}

// ---------------------------------------------------------------------------------------------
// Finding and checking the binary

export const SIDECAR_NAME = 'cursor-bridge';

export function sidecarFileName(platform: NodeJS.Platform = process.platform): string {
  return platform === 'win32' ? `${SIDECAR_NAME}.exe` : SIDECAR_NAME;
}

export interface FindOptions {
  /** `cursorBridge.sidecarPath`, already `~`-expanded; empty when unset. */
  setting: string;
  extensionPath: string;
  /** Development or test mode (not Production): PATH is searched too. */
  development: boolean;
  platform?: NodeJS.Platform;
  pathEnv?: string;
  isFile?: (p: string) => boolean;
}

export interface Found {
  path: string;
  source: 'setting' | 'bundled' | 'PATH';
}

function defaultIsFile(p: string): boolean {
  try {
    return fs.statSync(p).isFile();
  } catch {
    return false;
  }
}

/**
 * The setting, else the binary bundled in the VSIX (`server/`), else (development only: a
 * released extension must not run whatever happens to be on PATH) PATH. A configured path is used
 * even if it is wrong, so the mistake is reported instead of silently worked around.
 */
export function findSidecar(o: FindOptions): Found | undefined {
  const platform = o.platform ?? process.platform;
  const isFile = o.isFile ?? defaultIsFile;
  const join = platform === 'win32' ? path.win32.join : path.posix.join;
  if (o.setting) return { path: o.setting, source: 'setting' };
  const bundled = join(o.extensionPath, 'server', sidecarFileName(platform));
  if (isFile(bundled)) return { path: bundled, source: 'bundled' };
  if (o.development) {
    const sep = platform === 'win32' ? ';' : ':';
    for (const dir of (o.pathEnv ?? process.env.PATH ?? '').split(sep)) {
      if (!dir) continue;
      const candidate = join(dir, sidecarFileName(platform));
      if (isFile(candidate)) return { path: candidate, source: 'PATH' };
    }
  }
  return undefined;
}

/** Runs `<binary> --version`; resolves to the version, or fails with kind `sidecarNotFound`. */
export function checkSidecar(binary: string, timeoutMs = 10_000): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(binary, ['--version'], { timeout: timeoutMs, windowsHide: true }, (err, stdout) => {
      const match = /^cursor-bridge\s+(\S+)/m.exec(String(stdout));
      if (err || !match) {
        const why = err ? err.message : `unexpected --version output: ${JSON.stringify(String(stdout).slice(0, 200))}`;
        reject(new BridgeError('sidecarNotFound', `${binary} cannot be run: ${why}`));
      } else {
        resolve(match[1]);
      }
    });
  });
}

// ---------------------------------------------------------------------------------------------
// stderr, crashes

const STDERR_LINE = /^\S+\s+(ERROR|WARN|INFO|DEBUG|TRACE)\s+(.*)$/;

/** A sidecar stderr line (tracing's format) → the log level and the text without its timestamp. */
export function parseStderrLine(line: string): { level: keyof Logger; text: string } {
  const m = STDERR_LINE.exec(line.trimEnd());
  if (!m) return { level: 'warn', text: line.trimEnd() };
  const level = m[1].toLowerCase() as keyof Logger;
  return { level, text: m[2] };
}

/** Counts crashes in a sliding window, to stop restarting a sidecar that cannot stay up. */
export class CrashTracker {
  private times: number[] = [];
  constructor(
    readonly limit = 5,
    readonly windowMs = 3 * 60_000,
  ) {}
  /** Records a crash at `now`; true when the limit is reached within the window. */
  record(now: number): boolean {
    this.times = this.times.filter((t) => now - t < this.windowMs);
    this.times.push(now);
    return this.times.length >= this.limit;
  }
  get recent(): number {
    return this.times.length;
  }
  reset(): void {
    this.times = [];
  }
}

// ---------------------------------------------------------------------------------------------
// One running sidecar process

interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
  error?: Error;
}

function describeExit(e: ExitInfo): string {
  if (e.error) return `could not run: ${e.error.message}`;
  if (e.signal) return `killed by ${e.signal}`;
  return `exited with code ${e.code}`;
}

function timeout(ms: number): Promise<'timeout'> {
  return new Promise((resolve) => setTimeout(() => resolve('timeout'), ms).unref?.());
}

class SidecarProcess {
  readonly exited: Promise<ExitInfo>;
  /** `initialize` succeeded. */
  ready = false;
  /** We asked it to stop: its exit is not a crash. */
  stopping = false;
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly connection: MessageConnection;
  private readonly gone: Promise<never>;

  constructor(
    binary: string,
    env: NodeJS.ProcessEnv,
    log: Logger,
    onDelta: (delta: ChatDelta) => void,
    onModelsChanged: (models: ModelInfo[]) => void = () => undefined,
  ) {
    this.child = spawn(binary, ['stdio'], { stdio: 'pipe', env, windowsHide: true });
    const child = this.child;
    this.exited = new Promise<ExitInfo>((resolve) => {
      child.once('exit', (code, signal) => resolve({ code, signal }));
      child.once('error', (error) => resolve({ code: null, signal: null, error }));
    });
    // A dead child's pipes fail writes with EPIPE; the exit is handled above.
    child.stdin.on('error', (e) => log.debug(`sidecar stdin: ${e.message}`));
    readline.createInterface({ input: child.stderr }).on('line', (line) => {
      const { level, text } = parseStderrLine(line);
      if (text) log[level](`[sidecar] ${text}`);
    });
    this.connection = createMessageConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin), {
      error: (m) => log.error(`jsonrpc: ${m}`),
      warn: (m) => log.warn(`jsonrpc: ${m}`),
      info: (m) => log.debug(`jsonrpc: ${m}`),
      log: (m) => log.trace(`jsonrpc: ${m}`),
    });
    this.connection.onNotification(Notification.chatDelta, (params: unknown) => {
      if (typeof params === 'object' && params !== null && typeof (params as ChatDelta).turnId === 'string') {
        onDelta(params as ChatDelta);
      }
    });
    this.connection.onNotification(Notification.modelsChanged, (params: unknown) => {
      const models = (params as ModelsListResult | null)?.models;
      if (Array.isArray(models)) onModelsChanged(models);
    });
    this.connection.listen();
    this.gone = this.exited.then((info) => {
      throw new BridgeError('sidecarCrashed', `the sidecar ${describeExit(info)}`);
    });
    this.gone.catch(() => undefined);
    void this.exited.then(() => this.connection.dispose());
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  request<M extends Method>(method: M, params: Requests[M]['params'], token?: CancellationLike): Promise<Requests[M]['result']> {
    // vscode-jsonrpc sends `$/cancelRequest` itself when this token fires.
    const source = new CancellationTokenSource();
    const link = token?.onCancellationRequested(() => source.cancel());
    if (token?.isCancellationRequested) source.cancel();
    let sent: Promise<Requests[M]['result']>;
    try {
      sent =
        params === undefined
          ? this.connection.sendRequest<Requests[M]['result']>(method, source.token)
          : this.connection.sendRequest<Requests[M]['result']>(method, params, source.token);
    } catch (e) {
      sent = Promise.reject(e); // the connection is already closed
    }
    // `gone` first: when both have already failed, the process's exit is the better reason.
    return Promise.race([this.gone, sent])
      .catch((e: unknown) => {
        throw toBridgeError(e);
      })
      .finally(() => {
        link?.dispose();
        source.dispose();
      });
  }

  async initialize(params: InitializeParams, timeoutMs: number): Promise<InitializeResult> {
    const result = await Promise.race([this.request(Request.initialize, params), timeout(timeoutMs)]);
    if (result === 'timeout') throw new BridgeError('sidecarCrashed', `no answer to initialize within ${timeoutMs} ms`);
    if (result.protocolVersion !== PROTOCOL_VERSION) {
      throw new BridgeError('sidecarNotFound', `the sidecar speaks protocol ${result.protocolVersion}, not ${PROTOCOL_VERSION}`);
    }
    this.ready = true;
    return result;
  }

  /** `shutdown` + `exit`, then a kill if it lingers. */
  async stop(timeoutMs: number): Promise<void> {
    this.stopping = true;
    const half = Math.max(100, timeoutMs / 2);
    await Promise.race([this.request(Request.shutdown, undefined).catch(() => undefined), timeout(half)]);
    try {
      await this.connection.sendNotification(Notification.exit);
    } catch {
      // Already closed: it is exiting anyway.
    }
    // Closing stdin is the protocol's other way out (EOF), should the `exit` frame be lost.
    this.child.stdin.end();
    if ((await Promise.race([this.exited, timeout(half)])) === 'timeout') {
      this.child.kill('SIGKILL');
      await Promise.race([this.exited, timeout(1000)]);
    }
  }

  kill(): void {
    this.stopping = true;
    this.child.kill('SIGKILL');
  }
}

// ---------------------------------------------------------------------------------------------
// The manager: one sidecar at a time, started on demand

export interface LaunchConfig {
  binary: string;
  /** The full environment for the sidecar (secrets never go on argv). */
  env: NodeJS.ProcessEnv;
  initialize: InitializeParams;
}

export interface SidecarManagerOptions {
  log: Logger;
  /** Read fresh at every start; throws a `sidecarNotFound` BridgeError when there is no binary. */
  launchConfig(): Promise<LaunchConfig>;
  /** The crash limit was reached; nothing restarts until `restart()` is called. */
  onGaveUp(crashes: number): void;
  onReady?(result: InitializeResult): void;
  /** The sidecar found a changed model list on its own (`models/changed`). */
  onModelsChanged?(models: ModelInfo[]): void;
  crashLimit?: number;
  crashWindowMs?: number;
  initializeTimeoutMs?: number;
  stopTimeoutMs?: number;
  /** Delay before the n-th automatic restart: n × this. */
  restartBackoffMs?: number;
}

export class SidecarManager implements Bridge {
  private current: SidecarProcess | undefined;
  private starting: Promise<SidecarProcess> | undefined;
  private readonly crashes: CrashTracker;
  private gaveUp = false;
  private disposed = false;
  private inFlight = 0;
  private restartWhenIdle = false;
  /** A restart that has not read its launch configuration yet. */
  private pendingRestart: Promise<void> | undefined;
  private restartTimer: NodeJS.Timeout | undefined;
  private readonly handlers = new Map<string, (delta: ChatDelta) => void>();
  /** Serialises restarts and stops. */
  private transition: Promise<void> = Promise.resolve();

  constructor(private readonly o: SidecarManagerOptions) {
    this.crashes = new CrashTracker(o.crashLimit ?? 5, o.crashWindowMs ?? 3 * 60_000);
  }

  get running(): boolean {
    return this.current?.ready === true;
  }

  get pid(): number | undefined {
    return this.current?.pid;
  }

  async request<M extends Method>(method: M, params: Requests[M]['params'], token?: CancellationLike): Promise<Requests[M]['result']> {
    this.inFlight++;
    try {
      const proc = await this.ensure();
      return await proc.request(method, params, token);
    } finally {
      this.inFlight--;
      if (this.inFlight === 0 && this.restartWhenIdle) {
        this.restartWhenIdle = false;
        void this.restart('settings changed').catch(() => undefined);
      }
    }
  }

  onDelta(turnId: string, handler: (delta: ChatDelta) => void): DisposableLike {
    this.handlers.set(turnId, handler);
    return { dispose: () => this.handlers.delete(turnId) };
  }

  /** The running sidecar, started (and initialized) if needed. */
  ensure(): Promise<SidecarProcess> {
    if (this.disposed) return Promise.reject(new BridgeError('sidecarCrashed', 'the extension is shutting down'));
    if (this.gaveUp) return Promise.reject(new BridgeError('sidecarGaveUp', 'the sidecar crashed too often'));
    if (this.current?.ready && !this.current.stopping) return Promise.resolve(this.current);
    if (!this.starting) {
      const starting = this.start();
      this.starting = starting;
      const clear = () => {
        if (this.starting === starting) this.starting = undefined;
      };
      starting.then(clear, clear);
    }
    return this.starting;
  }

  /**
   * Stops the sidecar and starts a fresh one (new settings, new API key). `manual` (the command)
   * also forgets earlier crashes, so a sidecar that was given up on gets another chance. Requests
   * that arrive before the pending restart has read its configuration join it: it will see
   * whatever changed (one settings edit can fire several events).
   */
  restart(reason: string, manual = false): Promise<void> {
    if (manual) {
      this.crashes.reset();
      this.gaveUp = false;
    }
    if (this.pendingRestart) {
      this.o.log.debug(`restart already pending; also for: ${reason}`);
      return this.pendingRestart;
    }
    const restart = this.serialise(async () => {
      this.o.log.info(`restarting the sidecar: ${reason}`);
      await this.stopCurrent();
      await this.ensure();
    });
    this.pendingRestart = restart;
    const clear = () => {
      if (this.pendingRestart === restart) this.pendingRestart = undefined;
    };
    restart.then(clear, clear);
    return restart;
  }

  /** Restart once nothing is in flight, so a settings change does not break a running answer. */
  restartSoon(reason: string): void {
    if (this.inFlight === 0) {
      void this.restart(reason).catch((e: unknown) => this.o.log.warn(`restart failed: ${toBridgeError(e).message}`));
    } else {
      this.o.log.info(`will restart the sidecar when idle: ${reason}`);
      this.restartWhenIdle = true;
    }
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    await this.serialise(() => this.stopCurrent());
  }

  private serialise(op: () => Promise<void>): Promise<void> {
    const next = this.transition.then(op);
    this.transition = next.catch(() => undefined);
    return next;
  }

  private async stopCurrent(): Promise<void> {
    if (this.restartTimer) clearTimeout(this.restartTimer);
    this.restartTimer = undefined;
    // A start in progress is let finish, then stopped like any other.
    await this.starting?.catch(() => undefined);
    const proc = this.current;
    this.current = undefined;
    if (proc) {
      await proc.stop(this.o.stopTimeoutMs ?? 3000);
      this.o.log.info('sidecar stopped');
    }
  }

  private async start(): Promise<SidecarProcess> {
    const config = await this.o.launchConfig();
    // From here on, a change needs a restart of its own.
    this.pendingRestart = undefined;
    const version = await checkSidecar(config.binary);
    this.o.log.info(`starting ${config.binary} (cursor-bridge ${version})`);
    const proc = new SidecarProcess(
      config.binary,
      config.env,
      this.o.log,
      (d) => this.handlers.get(d.turnId)?.(d),
      (models) => this.o.onModelsChanged?.(models),
    );
    this.current = proc;
    void proc.exited.then((info) => this.onExit(proc, info));
    try {
      const result = await proc.initialize(config.initialize, this.o.initializeTimeoutMs ?? 20_000);
      const cli = result.capabilities.cli;
      this.o.log.info(
        `sidecar ${result.serverInfo.version} ready (pid ${proc.pid}); Cursor CLI ${cli.found ? `found: ${cli.path ?? '?'}` : 'not found'}`,
      );
      this.o.onReady?.(result);
      return proc;
    } catch (e) {
      const err = toBridgeError(e);
      this.o.log.error(`the sidecar did not start: ${err.message}${err.hint ? ` (${err.hint})` : ''}`);
      proc.kill();
      if (this.current === proc) this.current = undefined;
      this.crashed();
      throw err;
    }
  }

  private onExit(proc: SidecarProcess, info: ExitInfo): void {
    if (this.current === proc) this.current = undefined;
    // Stopped on purpose, or failed during start (counted there).
    if (proc.stopping || !proc.ready || this.disposed) return;
    this.o.log.error(`the sidecar ${describeExit(info)}; in-flight requests failed`);
    this.crashed();
  }

  private crashed(): void {
    if (this.disposed || this.gaveUp) return;
    if (this.crashes.record(Date.now())) {
      this.gaveUp = true;
      this.o.log.error(`the sidecar crashed ${this.crashes.recent} times within ${Math.round(this.crashes.windowMs / 60_000)} minutes; not restarting it`);
      this.o.onGaveUp(this.crashes.recent);
      return;
    }
    // Restart in the background so the model list and the next turn find it running.
    const delay = (this.o.restartBackoffMs ?? 1000) * this.crashes.recent;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      this.ensure().catch(() => undefined); // a failure is logged and counted in start()
    }, delay);
    this.restartTimer.unref?.();
  }
}

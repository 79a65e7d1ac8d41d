// The sidecar's lifecycle: one at a time, started on demand, restarted after a crash until it
// crashes too often, restarted when something it was started with changes (but not under a
// running answer), and stopped politely. This is the policy half; client.ts is the wire and
// bootstrap.ts the binary. No vscode import: the extension passes in what it needs, so this runs
// (and is tested) in plain Node against the real binary.

import { checkSidecar } from './bootstrap';
import { describeExit, SidecarClient, timeout, type CancellationLike, type ExitInfo, type Logger } from './client';
import { BridgeError, toBridgeError } from './errors';
import {
  Notification,
  Request,
  type ChatDelta,
  type InitializeParams,
  type InitializeResult,
  type Method,
  type ModelInfo,
  type Requests,
} from './protocol';
import { RESTART_KEYS, SECTION } from './settings';

export interface DisposableLike {
  dispose(): void;
}

/**
 * Runs a callback nobody awaits (an event handler, a notification, a timer): whatever it throws or
 * its promise rejects with goes to the log instead of becoming an unhandled rejection.
 */
export function detached(log: Pick<Logger, 'error'>, what: string, run: () => unknown): void {
  const failed = (e: unknown) => log.error(`${what} failed: ${toBridgeError(e).message}`);
  try {
    const result = run();
    if (typeof (result as PromiseLike<unknown> | undefined)?.then === 'function') {
      Promise.resolve(result).catch(failed);
    }
  } catch (e) {
    failed(e);
  }
}

/** What the provider and commands need from the sidecar; tests substitute a fake. */
export interface Bridge {
  request<M extends Method>(
    method: M,
    params: Requests[M]['params'],
    token?: CancellationLike,
  ): Promise<Requests[M]['result']>;
  /**
   * What the running sidecar said it can do (`initialize`), starting it if needed; rejects as a
   * request would when it cannot start.
   */
  capabilities(): Promise<InitializeResult['capabilities']>;
  /** Receive this turn's `chat/delta` notifications until disposed. */
  onDelta(turnId: string, handler: (delta: ChatDelta) => void): DisposableLike;
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

/** `shutdown` + `exit`, then a kill if it lingers. */
async function stopClient(proc: SidecarClient, timeoutMs: number): Promise<void> {
  proc.stopping = true;
  const half = Math.max(100, timeoutMs / 2);
  await Promise.race([proc.request(Request.shutdown, undefined).catch(() => undefined), timeout(half)]);
  await proc.notify(Notification.exit);
  proc.closeInput();
  if ((await Promise.race([proc.exited, timeout(half)])) === 'timeout') {
    proc.kill();
    await Promise.race([proc.exited, timeout(1000)]);
  }
}

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
  /** The crash limit was reached; nothing restarts until `restart()` is called. May be async (a rejection is logged). */
  onGaveUp(crashes: number): unknown;
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
  private current: SidecarClient | undefined;
  private starting: Promise<SidecarClient> | undefined;
  private readonly crashes: CrashTracker;
  private gaveUp = false;
  private disposed = false;
  private inFlight = 0;
  /** Why to restart once nothing is in flight, if a restart waits for that. */
  private restartWhenIdle: string | undefined;
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

  async request<M extends Method>(
    method: M,
    params: Requests[M]['params'],
    token?: CancellationLike,
  ): Promise<Requests[M]['result']> {
    this.inFlight++;
    try {
      const proc = await this.ensure();
      return await proc.request(method, params, token);
    } finally {
      this.inFlight--;
      if (this.inFlight === 0 && this.restartWhenIdle !== undefined) {
        const reason = this.restartWhenIdle;
        this.restartWhenIdle = undefined;
        this.restartSoon(reason);
      }
    }
  }

  onDelta(turnId: string, handler: (delta: ChatDelta) => void): DisposableLike {
    this.handlers.set(turnId, handler);
    return { dispose: () => this.handlers.delete(turnId) };
  }

  async capabilities(): Promise<InitializeResult['capabilities']> {
    const proc = await this.ensure();
    // Set by a successful initialize, which ensure() waited for.
    if (!proc.initialized) throw new BridgeError('sidecarCrashed', 'the sidecar is not initialized');
    return proc.initialized.capabilities;
  }

  /** The running sidecar, started (and initialized) if needed. */
  ensure(): Promise<SidecarClient> {
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
      const waiting = this.restartWhenIdle;
      this.restartWhenIdle = waiting === undefined || waiting === reason ? reason : `${waiting}; ${reason}`;
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
      await stopClient(proc, this.o.stopTimeoutMs ?? 3000);
      this.o.log.info('sidecar stopped');
    }
  }

  private async start(): Promise<SidecarClient> {
    const config = await this.o.launchConfig();
    // From here on, a change needs a restart of its own.
    this.pendingRestart = undefined;
    const version = await checkSidecar(config.binary);
    this.o.log.info(`starting ${config.binary} (cursor-bridge ${version})`);
    const proc = new SidecarClient(
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

  // In-flight requests need nothing here: each one races the process's exit (client.ts) and
  // fails with `sidecarCrashed` on its own.
  private onExit(proc: SidecarClient, info: ExitInfo): void {
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
      this.o.log.error(
        `the sidecar crashed ${this.crashes.recent} times within ${Math.round(this.crashes.windowMs / 60_000)} minutes; not restarting it`,
      );
      const crashes = this.crashes.recent;
      detached(this.o.log, 'reporting the crashed sidecar', () => this.o.onGaveUp(crashes));
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

type EventLike<T> = (listener: (e: T) => unknown) => DisposableLike;

/** The events that change what the sidecar was started with; `vscode.workspace` fits. */
export interface WorkspaceEvents {
  onDidChangeConfiguration: EventLike<{ affectsConfiguration(section: string): boolean }>;
  onDidGrantWorkspaceTrust: EventLike<void>;
  onDidChangeWorkspaceFolders: EventLike<unknown>;
}

/**
 * Settings, trust, folders and the API key only reach the sidecar through its start (argv, env,
 * `initialize`), so each change means a restart; `restartSoon` lets a running answer finish first.
 */
export function restartOnChanges(
  manager: Pick<SidecarManager, 'restartSoon'>,
  workspace: WorkspaceEvents,
  secrets: { onDidChange: EventLike<{ key: string }> },
  apiKeySecret: string,
): DisposableLike[] {
  return [
    workspace.onDidChangeConfiguration((e) => {
      const changed = RESTART_KEYS.filter((k) => e.affectsConfiguration(`${SECTION}.${k}`));
      if (changed.length > 0) manager.restartSoon(`settings changed: ${changed.join(', ')}`);
    }),
    workspace.onDidGrantWorkspaceTrust(() => manager.restartSoon('workspace trusted')),
    workspace.onDidChangeWorkspaceFolders(() => manager.restartSoon('workspace folders changed')),
    secrets.onDidChange((e) => {
      if (e.key === apiKeySecret) manager.restartSoon('API key changed');
    }),
  ];
}

// One running sidecar process and the JSON-RPC connection over its stdio. It knows the wire (the
// handshake, requests, notifications, how VS Code's cancellation and a dead process become
// protocol errors) but no policy: when to start, stop or restart is sidecar-manager.ts's call, so a failure
// here is always reported, never retried. No vscode import, so it runs in plain Node.

import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
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

const STDERR_LINE = /^\S+\s+(ERROR|WARN|INFO|DEBUG|TRACE)\s+(.*)$/;

/** A sidecar stderr line (tracing's format) → the log level and the text without its timestamp. */
export function parseStderrLine(line: string): { level: keyof Logger; text: string } {
  const m = STDERR_LINE.exec(line.trimEnd());
  if (!m) return { level: 'warn', text: line.trimEnd() };
  const level = m[1].toLowerCase() as keyof Logger;
  return { level, text: m[2] };
}

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
  error?: Error;
}

export function describeExit(e: ExitInfo): string {
  if (e.error) return `could not run: ${e.error.message}`;
  if (e.signal) return `killed by ${e.signal}`;
  return `exited with code ${e.code}`;
}

export function timeout(ms: number): Promise<'timeout'> {
  return new Promise((resolve) => setTimeout(() => resolve('timeout'), ms).unref?.());
}

export class SidecarClient {
  readonly exited: Promise<ExitInfo>;
  /** `initialize` succeeded. */
  ready = false;
  /** Its answer, once it succeeded. */
  initialized: InitializeResult | undefined;
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
    this.connection = createMessageConnection(
      new StreamMessageReader(child.stdout),
      new StreamMessageWriter(child.stdin),
      {
        error: (m) => log.error(`jsonrpc: ${m}`),
        warn: (m) => log.warn(`jsonrpc: ${m}`),
        info: (m) => log.debug(`jsonrpc: ${m}`),
        log: (m) => log.trace(`jsonrpc: ${m}`),
      },
    );
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

  request<M extends Method>(
    method: M,
    params: Requests[M]['params'],
    token?: CancellationLike,
  ): Promise<Requests[M]['result']> {
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

  /** Sends a notification; one to a closed connection is dropped (the process is exiting anyway). */
  async notify(method: string): Promise<void> {
    try {
      await this.connection.sendNotification(method);
    } catch {
      // Already closed.
    }
  }

  async initialize(params: InitializeParams, timeoutMs: number): Promise<InitializeResult> {
    const result = await Promise.race([this.request(Request.initialize, params), timeout(timeoutMs)]);
    if (result === 'timeout') throw new BridgeError('sidecarCrashed', `no answer to initialize within ${timeoutMs} ms`);
    if (result.protocolVersion !== PROTOCOL_VERSION) {
      throw new BridgeError(
        'sidecarNotFound',
        `the sidecar speaks protocol ${result.protocolVersion}, not ${PROTOCOL_VERSION}`,
      );
    }
    this.initialized = result;
    this.ready = true;
    return result;
  }

  /** EOF on stdin: the protocol's other way out, should the `exit` frame be lost. */
  closeInput(): void {
    this.child.stdin.end();
  }

  kill(): void {
    this.stopping = true;
    this.child.kill('SIGKILL');
  }
}

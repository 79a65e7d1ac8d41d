// A hand-written stand-in for the `vscode` module, injected by scripts/test.mjs (esbuild alias) so
// unit tests run under plain `node --test`. Only what the extension's pure modules touch: the LM
// part classes, enums, EventEmitter, cancellation, and a configurable workspace/window.

export class LanguageModelTextPart {
  constructor(public value: string) {}
}

export class LanguageModelDataPart {
  constructor(
    public data: Uint8Array,
    public mimeType: string,
  ) {}
  static json(value: unknown, mime = 'text/x-json'): LanguageModelDataPart {
    return new LanguageModelDataPart(new TextEncoder().encode(JSON.stringify(value)), mime);
  }
  static text(value: string, mime = 'text/plain'): LanguageModelDataPart {
    return new LanguageModelDataPart(new TextEncoder().encode(value), mime);
  }
}

export class LanguageModelToolCallPart {
  constructor(
    public callId: string,
    public name: string,
    public input: object,
  ) {}
}

export class LanguageModelToolResultPart {
  constructor(
    public callId: string,
    public content: unknown[],
  ) {}
}

/**
 * What VS Code 1.139 builds tool results with (its instances also pass `instanceof
 * LanguageModelToolResultPart` there; here they do not, so the check for this class is tested).
 */
export class LanguageModelToolResultPart2 {
  constructor(
    public callId: string,
    public content: unknown[],
    public isError?: boolean,
  ) {}
}

/** Proposed API; present in VS Code 1.139 at run time. */
export class LanguageModelThinkingPart {
  constructor(
    public value: string | string[],
    public id?: string,
    public metadata?: { readonly [key: string]: unknown },
  ) {}
}

export enum LanguageModelChatMessageRole {
  User = 1,
  Assistant = 2,
}

export enum LanguageModelChatToolMode {
  Auto = 1,
  Required = 2,
}

export class LanguageModelChatMessage {
  constructor(
    public role: number,
    public content: unknown[],
    public name?: string,
  ) {}
}

export enum ExtensionMode {
  Production = 1,
  Development = 2,
  Test = 3,
}

export class Disposable {
  constructor(private readonly callOnDispose: () => void) {}
  static from(...items: { dispose(): unknown }[]): Disposable {
    return new Disposable(() => items.forEach((i) => i.dispose()));
  }
  dispose(): void {
    this.callOnDispose();
  }
}

type Listener<T> = (e: T) => unknown;

export class EventEmitter<T> {
  private listeners = new Set<Listener<T>>();
  readonly event = (listener: Listener<T>): Disposable => {
    this.listeners.add(listener);
    return new Disposable(() => this.listeners.delete(listener));
  };
  fire(e: T): void {
    for (const l of [...this.listeners]) l(e);
  }
  dispose(): void {
    this.listeners.clear();
  }
}

export interface CancellationToken {
  readonly isCancellationRequested: boolean;
  readonly onCancellationRequested: (listener: Listener<void>) => Disposable;
}

export class CancellationTokenSource {
  private readonly emitter = new EventEmitter<void>();
  private cancelled = false;
  readonly token: CancellationToken;
  constructor() {
    const owner = { isCancelled: () => this.cancelled };
    this.token = {
      get isCancellationRequested() {
        return owner.isCancelled();
      },
      onCancellationRequested: this.emitter.event,
    };
  }
  cancel(): void {
    if (this.cancelled) return;
    this.cancelled = true;
    this.emitter.fire();
  }
  dispose(): void {
    this.emitter.dispose();
  }
}

export enum ProgressLocation {
  SourceControl = 1,
  Window = 10,
  Notification = 15,
}

type Provider = object;
type CommandHandler = (...args: unknown[]) => unknown;

/** Test hooks: what `workspace`, `window`, `lm` and `commands` report and record. */
export const stubState = {
  isTrusted: true,
  workspaceFolders: [] as { uri: { fsPath: string; scheme: string } }[],
  /** User settings, by full key (`cursorBridge.cliPath`). */
  config: {} as Record<string, unknown>,
  /** Workspace settings, by full key: `get()` prefers them, as VS Code's merged view does. */
  workspaceConfig: {} as Record<string, unknown>,
  /** The active text editor's document (`window.activeTextEditor`); undefined: none. */
  activeDocument: undefined as { fsPath: string; scheme: string } | undefined,
  messages: [] as { level: string; text: string }[],
  /** What the next showInputBox resolves to. */
  inputBoxAnswer: undefined as string | undefined,
  providers: new Map<string, Provider>(),
  commands: new Map<string, CommandHandler>(),
  channels: [] as { name: string; lines: string[] }[],
  executed: [] as string[],
};

const configChanged = new EventEmitter<{ affectsConfiguration(section: string): boolean }>();
const trustGranted = new EventEmitter<void>();
const foldersChanged = new EventEmitter<unknown>();

/** Test hook: the person trusts the workspace (VS Code then fires `onDidGrantWorkspaceTrust`). */
export function grantWorkspaceTrust(): void {
  stubState.isTrusted = true;
  trustGranted.fire();
}

/** Test hook: tell listeners these settings changed. */
export function fireConfigurationChange(keys: string[]): void {
  configChanged.fire({
    affectsConfiguration: (section) => keys.some((k) => k === section || k.startsWith(`${section}.`)),
  });
}

export const workspace = {
  get isTrusted(): boolean {
    return stubState.isTrusted;
  },
  get workspaceFolders() {
    return stubState.workspaceFolders;
  },
  getConfiguration(section?: string) {
    const full = (key: string) => (section ? `${section}.${key}` : key);
    return {
      get<T>(key: string, fallback?: T): T | undefined {
        const k = full(key);
        if (k in stubState.workspaceConfig) return stubState.workspaceConfig[k] as T;
        return (k in stubState.config ? stubState.config[k] : fallback) as T | undefined;
      },
      inspect<T>(key: string) {
        const k = full(key);
        return {
          key: k,
          globalValue: stubState.config[k] as T | undefined,
          workspaceValue: stubState.workspaceConfig[k] as T | undefined,
        };
      },
    };
  },
  onDidChangeConfiguration: configChanged.event,
  onDidGrantWorkspaceTrust: trustGranted.event,
  onDidChangeWorkspaceFolders: foldersChanged.event,
};

function message(level: string) {
  return (text: string, ...items: unknown[]): Promise<string | undefined> => {
    stubState.messages.push({ level, text });
    void items;
    return Promise.resolve(undefined);
  };
}

function logChannel(name: string) {
  const channel = { name, lines: [] as string[] };
  stubState.channels.push(channel);
  const at = (level: string) => (m: string | Error) =>
    void channel.lines.push(`${level}: ${m instanceof Error ? m.message : m}`);
  return {
    name,
    trace: at('trace'),
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    appendLine: at('line'),
    show: () => undefined,
    dispose: () => undefined,
  };
}

export const window = {
  get activeTextEditor() {
    const uri = stubState.activeDocument;
    return uri ? { document: { uri } } : undefined;
  },
  showErrorMessage: message('error'),
  showWarningMessage: message('warning'),
  showInformationMessage: message('info'),
  showInputBox: (): Promise<string | undefined> => Promise.resolve(stubState.inputBoxAnswer),
  createOutputChannel: (name: string) => logChannel(name),
  withProgress: <R>(_options: unknown, task: (progress: { report(v: unknown): void }) => Promise<R>): Promise<R> =>
    task({ report: () => undefined }),
};

export const lm = {
  registerLanguageModelChatProvider(vendor: string, provider: Provider): Disposable {
    stubState.providers.set(vendor, provider);
    return new Disposable(() => stubState.providers.delete(vendor));
  },
};

export const commands = {
  registerCommand(id: string, handler: CommandHandler): Disposable {
    stubState.commands.set(id, handler);
    return new Disposable(() => stubState.commands.delete(id));
  },
  executeCommand(id: string, ...args: unknown[]): Promise<unknown> {
    stubState.executed.push(id);
    const handler = stubState.commands.get(id);
    return Promise.resolve(handler?.(...args));
  },
};

export const env = {
  appName: 'Visual Studio Code (test stub)',
  uiKind: 1,
  remoteName: undefined as string | undefined,
};
export enum UIKind {
  Desktop = 1,
  Web = 2,
}

export const version = '1.139.1';

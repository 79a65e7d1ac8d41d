// The cursor-bridge wire protocol, v1. Mirrors sidecar/src/protocol/ and the vocab/ terms its
// messages are made of (the single source of truth), and protocol.md: test/protocol.test.ts fails
// when the method names, delta kinds or error kinds here drift from either, and the sidecar's
// protocol::mirror test when a type, field, shape or optionality does. Only types: no vscode import, so any client code can use it.

export const PROTOCOL_VERSION = 1;

/** Requests a client may send; each gets exactly one response. */
export const Request = {
  initialize: 'initialize',
  modelsList: 'models/list',
  chatSend: 'chat/send',
  sessionsList: 'sessions/list',
  sessionsClear: 'sessions/clear',
  status: 'status',
  doctor: 'doctor',
  probe: 'probe',
  shutdown: 'shutdown',
} as const;

/** Notifications, in either direction. */
export const Notification = {
  /** Sidecar → client: streamed output of a `chat/send` turn. */
  chatDelta: 'chat/delta',
  /** Client → sidecar: abort an in-flight request (vscode-jsonrpc sends it for us). */
  cancelRequest: '$/cancelRequest',
  /** Client → sidecar: exit now. */
  exit: 'exit',
  /** Sidecar → client: the model list changed (a background check after serving a cached list). */
  modelsChanged: 'models/changed',
} as const;

/** JSON-RPC error codes the sidecar answers with. */
export const ErrorCode = {
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internalError: -32603,
  notInitialized: -32002,
  requestCancelled: -32800,
  turnFailed: -32000,
} as const;

/** `error.data.kind`: why a request failed. */
export const ERROR_KINDS = [
  'cliNotFound',
  'authRequired',
  'invalidModel',
  'rateLimited',
  'usageLimit',
  'network',
  'timeout',
  'emptyResponse',
  'cliFailed',
  'invalidParams',
  'cancelled',
  'notInitialized',
  'internal',
  'badToolCall',
  'toolPolicy',
] as const;
export type ErrorKind = (typeof ERROR_KINDS)[number];

export interface ErrorData {
  kind: ErrorKind;
  /** What a person can do about it, one sentence. */
  hint?: string;
  /** Diagnostics (the CLI's stderr tail, redacted). For the log, not for the chat. */
  detail?: string;
}

// ---------------------------------------------------------------------------------------------
// initialize

export interface ClientInfo {
  name: string;
  version?: string;
}

/**
 * `initialize.options`. A key the sidecar does not know, or a value it cannot read, is ignored and
 * named in `capabilities.ignoredOptions` (a `workspaceTrusted` it cannot read means untrusted).
 */
export interface Options {
  requestTimeoutSeconds?: number;
  idleTimeoutSeconds?: number;
  maxConcurrent?: number;
  sessionTtlMinutes?: number;
  maxSessions?: number;
  force?: boolean;
  replayMaxChars?: number;
  utilityModel?: string | null;
  sendSystemMessages?: boolean;
  spares?: number;
  spareIdleSeconds?: number;
  /** `auto` (default): ACP when the CLI's ACP mode works, else print mode; `acp`; `print`. */
  backend?: 'auto' | 'acp' | 'print' | null;
  warmSessions?: number;
  warmIdleSeconds?: number;
  /**
   * VS Code's `workspace.isTrusted`; absent means trusted. `false`: the sidecar never runs agent
   * mode, never passes `--force`, and runs the CLI in a private scratch folder, not the user's.
   */
  workspaceTrusted?: boolean;
}

export interface InitializeParams {
  protocolVersion: number;
  clientInfo?: ClientInfo;
  workspaceFolders: string[];
  cliPath?: string;
  apiKey?: string;
  options?: Options;
}

export interface InitializeResult {
  protocolVersion: number;
  serverInfo: { name: string; version: string };
  capabilities: {
    deltaKinds: string[];
    cancel: boolean;
    sessions: boolean;
    cli: { found: boolean; path?: string };
    /** The `initialize.options` keys the sidecar understands. */
    options?: string[];
    /** Keys it was sent and ignored (an older sidecar than this extension). */
    ignoredOptions?: string[];
    /**
     * Client-owned tools (docs/client-tools.md): `chat/send` takes `tools`, messages carry
     * `toolCalls`/`toolResults`, and the `toolCall` delta asks the client to run one. `1` is the
     * first version; absent (an older sidecar): none of this, the CLI runs its own tools.
     */
    clientTools?: number;
  };
}

// ---------------------------------------------------------------------------------------------
// models/list

export interface ModelsListParams {
  refresh?: boolean;
}

export interface ModelCapabilities {
  thinking: boolean;
  toolCalling: boolean;
  imageInput: boolean;
}

export interface ModelInfo {
  id: string;
  name: string;
  family: string;
  maxInputTokens: number;
  maxOutputTokens: number;
  capabilities: ModelCapabilities;
  isDefault: boolean;
  /** The base model this SKU is a variant of (absent in lists cached by older sidecars). */
  base?: ModelBase;
  variant?: ModelVariant;
}

export interface ModelBase {
  id: string;
  name: string;
}

export interface ModelVariant {
  /** `minimal` … `max`; absent: the CLI's own default effort. */
  effort?: string;
  fast: boolean;
  thinking: boolean;
  label: string;
  /** The SKU the CLI uses for the base (one per base). */
  default: boolean;
}

export interface ModelsListResult {
  models: ModelInfo[];
}

// ---------------------------------------------------------------------------------------------
// chat/send

export type Mode = 'agent' | 'ask' | 'plan';
export type Role = 'user' | 'assistant' | 'system';

export interface ChatMessage {
  role: Role;
  /** May be empty when the message carries tool calls or results. */
  text: string;
  /** Assistant messages: the calls the model made (client-owned tools). */
  toolCalls?: ToolCall[];
  /** User messages: what the client's tools answered. */
  toolResults?: ToolResult[];
}

/** A tool the client runs for the model (VS Code's `LanguageModelChatTool`). */
export interface ToolDefinition {
  name: string;
  description: string;
  /** A JSON schema of the input object. */
  inputSchema: object;
}

export interface ToolCall {
  /** The sidecar's id (`call_` + 24 hex), echoed by the result. */
  callId: string;
  name: string;
  input: object;
}

export interface ToolResult {
  callId: string;
  /** The tool's name, when the client knows it. */
  name?: string;
  content: string;
  isError: boolean;
}

/** `"auto"` (default), `"none"`, `"required"`, or one tool by name. */
export type ToolChoice = 'auto' | 'none' | 'required' | { name: string };

/** An image, inline: `image/png`, `image/jpeg`, `image/gif` or `image/webp`, base64. */
export interface Image {
  mimeType: string;
  data: string;
}

export interface ChatSendParams {
  turnId: string;
  model: string;
  mode: Mode;
  /** The folder the CLI works in: one of `initialize.workspaceFolders` (or inside one); default the first. */
  workspace?: string;
  conversationId?: string;
  sessionId?: string;
  utility?: boolean;
  messages: ChatMessage[];
  /** The new user message's images, for a model whose `capabilities.imageInput` is true. */
  images?: Image[];
  /** Client-owned tools (capability `clientTools` ≥ 1): the model may call only these, never Cursor's own. */
  tools?: ToolDefinition[];
  toolChoice?: ToolChoice;
  parallelToolCalls?: boolean;
}

export interface Usage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  /** Of `outputTokens`, those spent reasoning, when the agent counted them. */
  reasoningTokens?: number;
}

export interface ChatSendResult {
  turnId: string;
  /** `null` for utility turns. */
  sessionId: string | null;
  resumed: boolean;
  /** `"end"`: the CLI finished the turn; `"toolCalls"`: it waits for the results of the `toolCall` deltas. */
  stopReason: 'end' | 'toolCalls';
  usage?: Usage;
  durationMs: number;
}

/** The `chat/delta` kinds, in the order of `DeltaBody::KINDS` (sidecar/src/protocol/chat.rs). */
export const DELTA_KINDS = [
  'text',
  'thinking',
  'thinkingDone',
  'toolStarted',
  'toolCompleted',
  'permissionDenied',
  'session',
  'usage',
  'toolCall',
] as const;
export type DeltaKind = (typeof DELTA_KINDS)[number];

/** What one `chat/delta` carries, tagged by `kind`. */
export type DeltaBody =
  | { kind: 'text'; text: string }
  | { kind: 'thinking'; text: string }
  | { kind: 'thinkingDone' }
  | { kind: 'toolStarted'; callId: string; tool: string; summary: string }
  | { kind: 'toolCompleted'; callId: string; tool: string; summary: string; ok: boolean; detail?: string }
  | { kind: 'permissionDenied'; tool: string; summary: string; hint: string }
  | { kind: 'session'; sessionId: string; resumed: boolean; replayed: boolean }
  | { kind: 'usage'; usage: Usage }
  /** Run this client-owned tool; the turn then ends with `stopReason: "toolCalls"`. */
  | { kind: 'toolCall'; callId: string; name: string; input: object };

export type ChatDelta = { turnId: string; seq: number } & DeltaBody;

// ---------------------------------------------------------------------------------------------
// sessions/list, sessions/clear, status

export interface SessionSummary {
  sessionId: string;
  conversationId?: string;
  mode: Mode;
  model: string;
  workspace: string;
  turns: number;
  lastUsedMs: number;
}

export interface SessionsListResult {
  sessions: SessionSummary[];
}

export interface SessionsClearParams {
  sessionId?: string;
  /** Without `sessionId`: every sidecar's sessions, not only this window's. */
  all?: boolean;
}

export interface SessionsClearResult {
  cleared: number;
}

export interface StatusResult {
  version: string;
  cli: {
    found: boolean;
    path?: string;
    version?: string;
    loggedIn: boolean | null;
    account?: string;
    apiKey: boolean;
    hint?: string;
    /** Why the CLI was not found: a configured path names its setting and the path tried. */
    problem?: string;
  };
  backend: BackendStatus;
  sessions: number;
  inFlight: number;
  logFile?: string;
}

/** Which backend serves turns, and why. */
export interface BackendStatus {
  /** What was asked for: `auto`, `acp` or `print`. */
  configured: string;
  /** What serves the next turn. */
  active: string;
  /** Why, when it is not what was asked for or a fallback happened. */
  reason?: string;
  /** The backend that served the last turn, and why that one. */
  lastTurn?: ServedTurn;
  /** Agent processes kept warm (ACP sessions, spares). */
  warm: number;
}

export interface ServedTurn {
  backend: string;
  reason: string;
}

export type CheckStatus = 'ok' | 'warn' | 'fail' | 'info';

export interface Check {
  id: string;
  title: string;
  status: CheckStatus;
  summary: string;
  detail?: string;
  fix?: string;
}

export interface DoctorResult {
  ok: boolean;
  checks: Check[];
}

export interface ProbeParams {
  /** The person agreed to spend a few requests of their plan (tiny prompts). */
  spend?: boolean;
}

export type ProbeOutcome = 'asAssumed' | 'differs' | 'failed' | 'notAsked';

export interface ProbeFinding {
  /** Stable: `acpStart`, `catalogue`, `sessionTools`, `promptUsage`, `toolPermission`, `sessionLoad`, `cancelCommands`, `chatStore`. */
  id: string;
  question: string;
  outcome: ProbeOutcome;
  /** What this build did (or why it was not asked). */
  observed: string;
  /** What the bridge does about it with this build. */
  bridge: string;
  /** Figures and shapes seen, for a bug report. */
  measured?: unknown;
}

export interface ProbeResult {
  agent: string;
  version?: string;
  /** Requests of the person's plan spent. */
  spent: number;
  /** What was learnt is kept for this build, and the bridge acts on it. */
  kept: boolean;
  findings: ProbeFinding[];
}

/** Params and result of every request, by method name: lets the client type `request()`. */
export interface Requests {
  [Request.initialize]: { params: InitializeParams; result: InitializeResult };
  [Request.modelsList]: { params: ModelsListParams; result: ModelsListResult };
  [Request.chatSend]: { params: ChatSendParams; result: ChatSendResult };
  [Request.sessionsList]: { params: undefined; result: SessionsListResult };
  [Request.sessionsClear]: { params: SessionsClearParams; result: SessionsClearResult };
  [Request.status]: { params: undefined; result: StatusResult };
  [Request.doctor]: { params: undefined; result: DoctorResult };
  [Request.probe]: { params: ProbeParams; result: ProbeResult };
  [Request.shutdown]: { params: undefined; result: null };
}
export type Method = keyof Requests;

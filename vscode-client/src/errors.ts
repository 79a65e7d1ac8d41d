// What a failed request looks like to a person. The Chat view offers two renderings
// (docs/vscode-provider.md §8.4):
// - a thrown Error: an error box with Try Again, the turn marked failed. Right for transient
//   trouble, where trying again is the fix. Copilot appends `err.stack` to the message (leaking
//   file paths, breaking Markdown), so the stack is cleared and the message kept to one line.
// - Markdown text reported as the answer: the turn ends normally. Right for set-up problems the
//   person must fix first; Try Again would only fail the same way.
// The sidecar's own message/hint/detail can carry paths and CLI output, so they go to the log and
// the person sees only the texts of this table.

import { ErrorCodes, ResponseError } from 'vscode-jsonrpc/node';
import { ErrorCode, ERROR_KINDS, type ErrorData, type ErrorKind } from './protocol';

/** Failures the extension itself detects, beside the sidecar's `error.data.kind`. */
export const CLIENT_ERROR_KINDS = ['sidecarNotFound', 'sidecarCrashed', 'sidecarGaveUp', 'unknown'] as const;
export type ClientErrorKind = (typeof CLIENT_ERROR_KINDS)[number];
export type FailureKind = ErrorKind | ClientErrorKind;

export class BridgeError extends Error {
  constructor(
    readonly kind: FailureKind,
    message: string,
    readonly hint?: string,
    readonly detail?: string,
  ) {
    super(message);
    this.name = 'BridgeError';
  }
}

const KNOWN_KINDS: ReadonlySet<string> = new Set<string>([...ERROR_KINDS, ...CLIENT_ERROR_KINDS]);

// vscode-jsonrpc's own codes for a connection that went away under a pending request.
const CONNECTION_GONE_CODES: ReadonlySet<number> = new Set<number>([
  ErrorCodes.PendingResponseRejected,
  ErrorCodes.ConnectionInactive,
  ErrorCodes.MessageWriteError,
  ErrorCodes.MessageReadError,
]);

/** Anything a request can throw, as a BridgeError with a kind from the table below. */
export function toBridgeError(e: unknown): BridgeError {
  if (e instanceof BridgeError) return e;
  if (e instanceof ResponseError) {
    const data = e.data as Partial<ErrorData> | undefined;
    if (data && typeof data.kind === 'string' && KNOWN_KINDS.has(data.kind)) {
      return new BridgeError(data.kind, e.message, data.hint, data.detail);
    }
    if (e.code === ErrorCode.requestCancelled) return new BridgeError('cancelled', e.message);
    if (CONNECTION_GONE_CODES.has(e.code)) return new BridgeError('sidecarCrashed', e.message);
    return new BridgeError('unknown', `${e.message} (code ${e.code})`);
  }
  return new BridgeError('unknown', e instanceof Error ? e.message : String(e));
}

type Rendering = 'throw' | 'markdown' | 'silent';

interface Entry {
  render: Rendering;
  /** One sentence: what happened. */
  what: string;
  /** One sentence: what to do. */
  action: string;
}

const SHOW_LOGS = 'Details: **Cursor Bridge: Show Logs**.';

/** Set-up failures: their explanation also points to Check Setup, which finds every such problem at once. */
export const SETUP_KINDS: ReadonlySet<FailureKind> = new Set<FailureKind>([
  'cliNotFound',
  'authRequired',
  'sidecarNotFound',
  'sidecarGaveUp',
]);
export const CHECK_SETUP_LINK =
  'Run [Cursor Bridge: Check Setup](command:cursorBridge.checkSetup) to see everything that is missing and fix it.';

/** Every failure kind, how it renders and what it says. */
export const FAILURES: Readonly<Record<FailureKind, Entry>> = {
  // Set-up problems: explained as the answer.
  cliNotFound: {
    render: 'markdown',
    what: 'Cursor Bridge could not find the Cursor CLI (`cursor-agent`).',
    action:
      'Install it (`curl https://cursor.com/install -fsS | bash`) or set `cursorBridge.cliPath` to where it is, then send your message again.',
  },
  authRequired: {
    render: 'markdown',
    what: 'The Cursor CLI is not logged in, or its API key was refused.',
    action:
      'Run `agent login` in a terminal, or store an API key with **Cursor Bridge: Set API Key**, then send your message again.',
  },
  invalidModel: {
    render: 'markdown',
    what: 'This Cursor model is unknown or not included in your Cursor plan.',
    action: 'Pick another Cursor model in the model picker (**Cursor Bridge: Refresh Models** updates the list).',
  },
  usageLimit: {
    render: 'markdown',
    what: "Your Cursor plan's usage limit is reached.",
    action: 'Wait until it resets or change your plan in the Cursor dashboard; another model may still be available.',
  },
  sidecarNotFound: {
    render: 'markdown',
    what: 'Cursor Bridge cannot start its helper program (`cursor-bridge`): it is missing or does not run on this system.',
    action:
      'Reinstall the extension for your platform, or set `cursorBridge.sidecarPath` to a working `cursor-bridge` binary.',
  },
  sidecarGaveUp: {
    render: 'markdown',
    what: 'The Cursor Bridge helper program crashed repeatedly and was stopped.',
    action: 'Run **Cursor Bridge: Restart Sidecar** to start it again.',
  },
  // Transient problems: an error box with Try Again.
  rateLimited: {
    render: 'throw',
    what: 'Cursor is rate-limiting requests right now.',
    action: 'Wait a moment, then press Try Again.',
  },
  network: {
    render: 'throw',
    what: "The Cursor CLI could not reach Cursor's servers.",
    action: 'Check your connection or proxy, then press Try Again.',
  },
  timeout: {
    render: 'throw',
    what: 'Cursor did not answer in time.',
    action: 'Press Try Again, or raise `cursorBridge.idleTimeoutSeconds` / `cursorBridge.requestTimeoutSeconds`.',
  },
  // Said as the answer: VS Code's Copilot harness fails a turn whose first reply has no visible
  // text ("No response was returned"), and a reply that only reasoned is no answer either.
  emptyResponse: {
    render: 'markdown',
    what: "Cursor's model finished without a visible answer.",
    action: 'Ask again, or pick another model.',
  },
  sidecarCrashed: {
    render: 'throw',
    what: 'The Cursor Bridge helper program stopped before the answer was complete.',
    action: 'It restarts by itself; press Try Again.',
  },
  cliFailed: {
    render: 'throw',
    what: 'The Cursor CLI failed.',
    action: 'Press Try Again.',
  },
  invalidParams: {
    render: 'throw',
    what: 'Cursor Bridge sent a request the helper program refused (a bug).',
    action: 'Press Try Again; if it persists, please report it with the log.',
  },
  notInitialized: {
    render: 'throw',
    what: 'The Cursor Bridge helper program was not ready.',
    action: 'Press Try Again.',
  },
  internal: {
    render: 'throw',
    what: 'The Cursor Bridge helper program hit an internal error (a bug).',
    action: 'Press Try Again; if it persists, please report it with the log.',
  },
  badToolCall: {
    render: 'throw',
    what: "Cursor's model called one of Copilot's tools in a way the tool does not accept, even when asked again.",
    action: 'Press Try Again, or pick another model.',
  },
  toolPolicy: {
    render: 'throw',
    what: "Cursor ran one of its own tools although only Copilot's tools are allowed, so the turn was stopped.",
    action:
      "Please report it with the log. Meanwhile you can set `cursorBridge.tools` to `cursor` to let Cursor's agent work on its own.",
  },
  unknown: {
    render: 'throw',
    what: 'Cursor Bridge failed unexpectedly.',
    action: 'Press Try Again.',
  },
  // The person pressed Stop: nothing to show.
  cancelled: { render: 'silent', what: '', action: '' },
};

export type FailureRendering =
  { render: 'markdown'; markdown: string } | { render: 'throw'; error: Error } | { render: 'silent' };

/**
 * How to show `err`. `utility` requests (chat titles, progress messages) always throw: a Markdown
 * explanation would become the chat's title, while a failed title request is simply dropped.
 */
export function renderFailure(err: BridgeError, opts: { utility?: boolean } = {}): FailureRendering {
  const entry = FAILURES[err.kind] ?? FAILURES.unknown;
  if (entry.render === 'silent') return { render: 'silent' };
  if (entry.render === 'markdown' && !opts.utility) {
    const setup = SETUP_KINDS.has(err.kind) ? `${CHECK_SETUP_LINK}\n\n` : '';
    return { render: 'markdown', markdown: `**${entry.what}**\n\n${entry.action}\n\n${setup}_${SHOW_LOGS}_\n` };
  }
  return { render: 'throw', error: chatError(`**Cursor Bridge:** ${entry.what} ${entry.action} ${SHOW_LOGS}`) };
}

/** An Error the Chat view shows cleanly: one line, no stack (Copilot would append it). */
export function chatError(message: string): Error {
  const error = new Error(message.replace(/\s*\n\s*/g, ' '));
  error.stack = '';
  return error;
}

/** The table's text for a notification, which shows no Markdown. */
export function plainMessage(kind: FailureKind): string {
  const entry = FAILURES[kind] ?? FAILURES.unknown;
  return `Cursor Bridge: ${entry.what} ${entry.action}`.replace(/\*\*|`/g, '');
}

/**
 * Notes the answer carries about the request itself (not failures): one short Markdown line each,
 * reported before the answer, at most once per response.
 */
export const NOTICES = {
  /** The request had image parts this model cannot be sent; only the rest was sent. */
  imagesNotSent: (count: number): string =>
    `${count === 1 ? 'The attached image was' : `The ${count} attached images were`} not sent to the model: ` +
    "Cursor Bridge sends images only to models that take them (Cursor's ACP mode; print mode sends " +
    'text only), as PNG, JPEG, GIF or WebP.',
} as const;

// VS Code request messages → protocol messages. The sidecar needs text: each message's text parts
// joined, tool calls and results (from turns another model answered with VS Code's tools) as short
// lines so the history stays readable, and our `stateful_marker` for the session id. Other data
// parts (images, cache hints) and thinking parts carry nothing the CLI can use; images are counted,
// so the answer can say that they were not sent.

import * as vscode from 'vscode';
import { MARKER_MIME, parseMarker } from './marker';
import type { ChatMessage, Role } from './protocol';
import { dataPartCtor, thinkingPartCtor } from './newer-api';

/** One content part, by what it is. */
export type Part =
  | { type: 'text'; value: string }
  | { type: 'toolCall'; callId: string; name: string; input: unknown }
  | { type: 'toolResult'; callId: string; content: readonly unknown[] }
  | { type: 'data'; mimeType: string; data: Uint8Array }
  | { type: 'other' };

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null;
}

export function classifyPart(part: unknown): Part {
  if (part instanceof vscode.LanguageModelTextPart) return { type: 'text', value: part.value };
  if (part instanceof vscode.LanguageModelToolCallPart) {
    return { type: 'toolCall', callId: part.callId, name: part.name, input: part.input };
  }
  if (part instanceof vscode.LanguageModelToolResultPart) {
    return { type: 'toolResult', callId: part.callId, content: part.content };
  }
  const DataPart = dataPartCtor();
  if (DataPart && part instanceof DataPart) return { type: 'data', mimeType: part.mimeType, data: part.data };
  const thinking = thinkingPartCtor();
  if (thinking && part instanceof thinking) return { type: 'other' };
  // Parts built by another copy of the API classes (e.g. `LanguageModelTextPart2`, or parts that
  // crossed the extension-host boundary) fail `instanceof`; recognise them by shape.
  if (!isRecord(part)) return { type: 'other' };
  if (typeof part.mimeType === 'string' && part.data instanceof Uint8Array) {
    return { type: 'data', mimeType: part.mimeType, data: part.data };
  }
  if (typeof part.callId === 'string') {
    if (Array.isArray(part.content)) return { type: 'toolResult', callId: part.callId, content: part.content };
    if (typeof part.name === 'string') return { type: 'toolCall', callId: part.callId, name: part.name, input: part.input };
  }
  // Thinking parts also have a `value`, but carry an `id`/`metadata` and are never plain text.
  if (typeof part.value === 'string' && !('id' in part) && !('metadata' in part)) {
    return { type: 'text', value: part.value };
  }
  return { type: 'other' };
}

/**
 * The mime type of an image part: a `LanguageModelDataPart` with an `image/*` type, or a part of
 * that shape from another copy of the API (whatever its `data` arrived as); else undefined.
 */
export function imageMimeOf(part: unknown): string | undefined {
  const mime = isRecord(part) ? part.mimeType : undefined;
  return typeof mime === 'string' && /^image\//i.test(mime) ? mime : undefined;
}

// VS Code's role numbers (System = 3 is proposed API, so not in the stable enum).
const ROLE_USER = 1;
const ROLE_ASSISTANT = 2;
const ROLE_SYSTEM = 3;

function roleOf(role: number): Role {
  switch (role) {
    case ROLE_ASSISTANT:
      return 'assistant';
    case ROLE_SYSTEM:
      return 'system';
    case ROLE_USER:
    default:
      return 'user';
  }
}

const TOOL_INPUT_CHARS = 200;
const TOOL_RESULT_CHARS = 300;

function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

function jsonOf(value: unknown): string {
  try {
    return JSON.stringify(value) ?? '';
  } catch {
    return '';
  }
}

export function renderToolCall(name: string, input: unknown): string {
  const args = oneLine(jsonOf(input), TOOL_INPUT_CHARS);
  return `(tool call: ${name}${args && args !== '{}' ? ` ${args}` : ''})`;
}

export function renderToolResult(name: string | undefined, content: readonly unknown[]): string {
  const text = content
    .map(classifyPart)
    .map((p) => (p.type === 'text' ? p.value : ''))
    .join(' ');
  const body = oneLine(text, TOOL_RESULT_CHARS);
  return `(tool result${name ? ` of ${name}` : ''}: ${body || 'no text'})`;
}

export interface Conversation {
  /** Protocol messages in order; messages without any text are left out. */
  messages: ChatMessage[];
  /** The system messages' text joined: where Copilot Chat names the mode. */
  systemText: string;
  /** The session id in the newest marker of ours, if the history has one. */
  sessionId?: string;
  /**
   * Image parts in the new request (the user messages after the last assistant message), which
   * the sidecar cannot take. Images earlier in the history were already pointed out in their turn.
   */
  newImages: number;
}

export function convertMessages(messages: readonly vscode.LanguageModelChatRequestMessage[]): Conversation {
  const out: ChatMessage[] = [];
  const toolNames = new Map<string, string>();
  let sessionId: string | undefined;
  let newImages = 0;
  for (const message of messages) {
    const role = roleOf(message.role as number);
    if (role === 'assistant') newImages = 0;
    else if (role === 'user') newImages += message.content.filter((p) => imageMimeOf(p) !== undefined).length;
    const pieces: string[] = [];
    // Text parts of one message are fragments of one text; tool lines stand on their own.
    let text = '';
    const flushText = () => {
      if (text) pieces.push(text);
      text = '';
    };
    for (const raw of message.content) {
      const part = classifyPart(raw);
      switch (part.type) {
        case 'text':
          text += part.value;
          break;
        case 'toolCall':
          flushText();
          toolNames.set(part.callId, part.name);
          pieces.push(renderToolCall(part.name, part.input));
          break;
        case 'toolResult':
          flushText();
          pieces.push(renderToolResult(toolNames.get(part.callId), part.content));
          break;
        case 'data':
          if (part.mimeType === MARKER_MIME) sessionId = parseMarker(part.data) ?? sessionId;
          break;
        case 'other':
          break;
      }
    }
    flushText();
    const joined = pieces.join('\n');
    if (joined) out.push({ role, text: joined });
  }
  const systemText = out
    .filter((m) => m.role === 'system')
    .map((m) => m.text)
    .join('\n');
  return { messages: out, systemText, sessionId, newImages };
}

/**
 * The options read here. `requestInitiator` (the id of the extension that made the request) is
 * there at run time in VS Code 1.139 but not in the stable types.
 */
export type RequestOptions = Pick<vscode.ProvideLanguageModelChatResponseOptions, 'modelOptions' | 'tools'> & {
  readonly requestInitiator?: unknown;
};

/** The extension behind the Chat view: the only one that sends title and progress requests. */
export const CHAT_VIEW_INITIATOR = 'github.copilot-chat';

/** The Chat view's id of this chat (`modelOptions._conversationId`; internal, so optional). */
export function conversationIdOf(options: RequestOptions): string | undefined {
  const id: unknown = options.modelOptions?.['_conversationId'];
  return typeof id === 'string' && id.length > 0 ? id : undefined;
}

/**
 * A title or progress-message request: the Chat view sends those without a conversation id and
 * without tools; its main requests always have both. Another extension using `vscode.lm` sends
 * neither, and is having a conversation all the same (it must resume, use the model it chose, and
 * see set-up problems explained), so a request from any initiator but the Chat view's is never a
 * utility one. Hosts that do not say who is asking get the heuristic alone.
 */
export function isUtilityRequest(options: RequestOptions): boolean {
  const initiator = options.requestInitiator;
  if (typeof initiator === 'string' && initiator !== CHAT_VIEW_INITIATOR) return false;
  return conversationIdOf(options) === undefined && (options.tools?.length ?? 0) === 0;
}

export function toolNamesOf(options: RequestOptions): string[] {
  return (options.tools ?? []).map((t) => t.name);
}

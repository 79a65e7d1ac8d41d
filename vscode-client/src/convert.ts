// VS Code request messages → protocol messages. The sidecar needs text: each message's text parts
// joined, and our `stateful_marker` for the session id. Tool calls and results become either the
// structured `toolCalls`/`toolResults` (client-owned tools, docs/client-tools.md: the model called
// VS Code's tools through us) or, when Cursor runs its own tools, short lines so the history of
// turns another model answered with VS Code's tools stays readable. Other data parts (images,
// cache hints) and thinking parts carry nothing the CLI can use; images are counted, so the answer
// can say that they were not sent.

import * as vscode from 'vscode';
import { MARKER_MIME, parseMarker } from './session-marker';
import type { ChatMessage, Image, Role, ToolCall, ToolChoice, ToolDefinition, ToolResult } from './protocol';
import { dataPartCtor, thinkingPartCtor, toolResultPart2Ctor } from './optional-parts';

/** One content part, by what it is. */
export type Part =
  | { type: 'text'; value: string }
  | { type: 'toolCall'; callId: string; name: string; input: unknown }
  | { type: 'toolResult'; callId: string; content: readonly unknown[]; isError: boolean }
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
  // `isError` is not in the 1.104 types, but VS Code 1.139's result parts carry it.
  const ToolResult2 = toolResultPart2Ctor();
  if (part instanceof vscode.LanguageModelToolResultPart || (ToolResult2 && part instanceof ToolResult2)) {
    const p = part as vscode.LanguageModelToolResultPart & { isError?: unknown };
    return { type: 'toolResult', callId: p.callId, content: p.content, isError: p.isError === true };
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
    if (Array.isArray(part.content)) {
      return { type: 'toolResult', callId: part.callId, content: part.content, isError: part.isError === true };
    }
    if (typeof part.name === 'string')
      return { type: 'toolCall', callId: part.callId, name: part.name, input: part.input };
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

/** The image formats the sidecar sends a model (what Cursor's models read). */
const IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);

/**
 * An image part as the sidecar takes it (`chat/send`'s `images`): one of the types Cursor's
 * models read, its bytes base64; undefined for any other part, or an image whose bytes did not
 * arrive as bytes.
 */
export function imageOf(part: unknown): Image | undefined {
  const mime = imageMimeOf(part)?.toLowerCase();
  if (mime === undefined || !IMAGE_TYPES.has(mime)) return undefined;
  const data = (part as { data?: unknown }).data;
  if (!(data instanceof Uint8Array) || data.length === 0) return undefined;
  return { mimeType: mime, data: Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('base64') };
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

/** Data parts that are bookkeeping, not content: Copilot's cache hints and our session marker. */
const BOOKKEEPING_MIMES: ReadonlySet<string> = new Set(['cache_control', MARKER_MIME]);
const TEXT_MIME = /^text\/|^application\/(?:[\w.+-]*\+)?json\b/i;
const PROMPT_TSX_STRINGS = 1000;

/** The `text` strings of a prompt-tsx tree (`LanguageModelPromptTsxPart.value`), in order. */
function promptTsxText(value: unknown): string {
  const out: string[] = [];
  const walk = (v: unknown, depth: number) => {
    if (out.length >= PROMPT_TSX_STRINGS || depth > 50 || !isRecord(v)) return;
    if (Array.isArray(v)) {
      for (const x of v) walk(x, depth + 1);
      return;
    }
    if (typeof v.text === 'string') out.push(v.text);
    for (const [k, x] of Object.entries(v)) if (k !== 'text') walk(x, depth + 1);
  };
  walk(value, 0);
  return out.join('');
}

/**
 * A tool result's content as the model reads it: its text parts concatenated, text-like data
 * decoded, anything else described in a few words (the model should know something was there).
 */
export function toolResultText(content: readonly unknown[]): string {
  const pieces: string[] = [];
  for (const raw of content) {
    const part = classifyPart(raw);
    if (part.type === 'text') pieces.push(part.value);
    else if (part.type === 'data') {
      if (BOOKKEEPING_MIMES.has(part.mimeType)) continue;
      if (TEXT_MIME.test(part.mimeType)) pieces.push(new TextDecoder().decode(part.data));
      else
        pieces.push(
          `[${/^image\//i.test(part.mimeType) ? 'image' : 'data'} ${part.mimeType}, ${part.data.byteLength} bytes, not shown]`,
        );
    } else if (part.type === 'other' && isRecord(raw) && 'value' in raw) {
      // LanguageModelPromptTsxPart: a rendered prompt tree; its text is what matters.
      const text = promptTsxText(raw.value);
      pieces.push(text || '[a prompt-tsx part without text]');
    } else if (part.type !== 'other') {
      pieces.push(`[a ${part.type} part, not shown]`);
    }
  }
  return pieces.join('');
}

export interface ConvertOptions {
  /**
   * Client-owned tools: assistant tool calls become `toolCalls` and user tool results
   * `toolResults`, so the sidecar can match them to the calls it made. Otherwise both are lines.
   */
  clientTools?: boolean;
}

export interface Conversation {
  /** Protocol messages in order; messages without any text (or tool calls or results) are left out. */
  messages: ChatMessage[];
  /** The system messages' text joined: where Copilot Chat names the mode. */
  systemText: string;
  /** The session id in the newest marker of ours, if the history has one. */
  sessionId?: string;
  /**
   * How many image parts the new request has (the user messages after the last assistant
   * message). Images earlier in the history were sent, or pointed out, in their own turn.
   */
  newImages: number;
  /** Those of them the sidecar can send (`imageOf`), in order. */
  sendableImages: Image[];
}

export function convertMessages(
  messages: readonly vscode.LanguageModelChatRequestMessage[],
  o: ConvertOptions = {},
): Conversation {
  const out: ChatMessage[] = [];
  const toolNames = new Map<string, string>();
  let sessionId: string | undefined;
  let newImages = 0;
  let sendableImages: Image[] = [];
  for (const message of messages) {
    const role = roleOf(message.role as number);
    if (role === 'assistant') [newImages, sendableImages] = [0, []];
    else if (role === 'user') {
      const images = message.content.filter((p) => imageMimeOf(p) !== undefined);
      newImages += images.length;
      sendableImages.push(...images.map(imageOf).filter((i): i is Image => i !== undefined));
    }
    const pieces: string[] = [];
    const toolCalls: ToolCall[] = [];
    const toolResults: ToolResult[] = [];
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
          toolNames.set(part.callId, part.name);
          // Calls belong to the assistant; one anywhere else (never seen) stays a readable line.
          if (o.clientTools && role === 'assistant') {
            toolCalls.push({ callId: part.callId, name: part.name, input: isRecord(part.input) ? part.input : {} });
            break;
          }
          flushText();
          pieces.push(renderToolCall(part.name, part.input));
          break;
        case 'toolResult':
          if (o.clientTools && role === 'user') {
            toolResults.push({ callId: part.callId, content: toolResultText(part.content), isError: part.isError });
            break;
          }
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
    if (!joined && toolCalls.length === 0 && toolResults.length === 0) continue;
    const converted: ChatMessage = { role, text: joined };
    if (toolCalls.length > 0) converted.toolCalls = toolCalls;
    if (toolResults.length > 0) converted.toolResults = toolResults;
    out.push(converted);
  }
  const systemText = out
    .filter((m) => m.role === 'system')
    .map((m) => m.text)
    .join('\n');
  return { messages: out, systemText, sessionId, newImages, sendableImages };
}

/**
 * The options read here. `requestInitiator` (the id of the extension that made the request) is
 * there at run time in VS Code 1.139 but not in the stable types.
 */
export type RequestOptions = Pick<vscode.ProvideLanguageModelChatResponseOptions, 'modelOptions' | 'tools'> &
  Partial<Pick<vscode.ProvideLanguageModelChatResponseOptions, 'toolMode'>> & {
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

/** The Chat view's tools as `chat/send.tools`; a tool without a schema takes no input. */
export function toolDefinitionsOf(options: RequestOptions): ToolDefinition[] {
  return (options.tools ?? []).map((t) => ({
    name: t.name,
    description: t.description,
    inputSchema: isRecord(t.inputSchema) ? t.inputSchema : { type: 'object', properties: {} },
  }));
}

/** `toolMode` Required: the model must call a tool; otherwise it may. */
export function toolChoiceOf(options: RequestOptions): ToolChoice {
  return options.toolMode === vscode.LanguageModelChatToolMode.Required ? 'required' : 'auto';
}

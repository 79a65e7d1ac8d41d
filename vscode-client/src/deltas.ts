// `chat/delta` notifications → response parts for the Chat view. Text streams as text parts,
// thinking as the (proposed) thinking part when this VS Code has it, and what the CLI does with its
// own tools as short Markdown lines, since the Chat view has no other place for them: the CLI runs
// those itself, so they are not VS Code tool calls. A `toolCall` delta (client-owned tools) is one:
// it becomes a `LanguageModelToolCallPart`, which VS Code runs, then calls us again with the result.

import * as vscode from 'vscode';
import type { ChatDelta, Usage } from './protocol';
import { asResponsePart, type ThinkingPartCtor } from './optional-parts';

export interface RendererOptions {
  /** `cursorBridge.showToolActivity`: tool lines in the answer. */
  showToolActivity: boolean;
  /** Undefined: thinking is dropped (this VS Code cannot show it). */
  thinkingPart?: ThinkingPartCtor;
  /** Utility answers become titles: no tool or permission lines in them. */
  utility?: boolean;
}

const SUMMARY_CHARS = 120;
const DETAIL_CHARS = 160;

function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** `text` as inline code, with a fence longer than any backtick run inside it. */
export function inlineCode(text: string): string {
  const longest = Math.max(0, ...(text.match(/`+/g) ?? []).map((r) => r.length));
  const fence = '`'.repeat(longest + 1);
  const pad = text.startsWith('`') || text.endsWith('`') ? ' ' : '';
  return `${fence}${pad}${text}${pad}${fence}`;
}

function isObject(v: unknown): v is object {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function toolLabel(tool: string, summary: string): string {
  const s = oneLine(summary, SUMMARY_CHARS);
  return s ? `${tool}: ${inlineCode(s)}` : tool;
}

export class TurnRenderer {
  /** The sidecar session this turn runs in (from the `session` delta). */
  sessionId?: string;
  usage?: Usage;
  /** Tool calls reported to VS Code in this turn. */
  toolCalls = 0;

  private tail = '';
  private openTool?: string;
  private thinkingId?: string;
  private thinkingBlocks = 0;
  private permissionShown = false;

  constructor(
    private readonly report: (part: vscode.LanguageModelResponsePart) => void,
    private readonly options: RendererOptions,
  ) {}

  handle(delta: ChatDelta): void {
    switch (delta.kind) {
      case 'text':
        if (!delta.text) return;
        this.closeThinking();
        this.closeToolLine();
        this.emit(delta.text);
        return;
      case 'thinking':
        this.thinking(delta.text);
        return;
      case 'thinkingDone':
        this.closeThinking();
        return;
      case 'toolStarted':
        if (!this.toolLinesWanted()) return;
        this.closeThinking();
        this.closeToolLine();
        this.paragraph();
        this.emit(`> 🔧 ${toolLabel(delta.tool, delta.summary)}`);
        this.openTool = delta.callId;
        return;
      case 'toolCompleted': {
        if (!this.toolLinesWanted()) return;
        const outcome = delta.ok ? '✓' : `✗${delta.detail ? ` ${oneLine(delta.detail, DETAIL_CHARS)}` : ''}`;
        if (this.openTool === delta.callId) {
          this.openTool = undefined;
          this.emit(` ${outcome}\n\n`);
        } else {
          // Something came between start and end: repeat the label on a line of its own.
          this.closeThinking();
          this.closeToolLine();
          this.paragraph();
          this.emit(`> 🔧 ${toolLabel(delta.tool, delta.summary)} ${outcome}\n\n`);
        }
        return;
      }
      case 'permissionDenied':
        // Shown even without tool activity: it is the only sign of why something was not done.
        if (this.permissionShown || this.options.utility) return;
        this.permissionShown = true;
        this.closeThinking();
        this.closeToolLine();
        this.paragraph();
        this.emit(`> ⚠️ Not allowed to run ${toolLabel(delta.tool, delta.summary)}. ${oneLine(delta.hint, 400)}\n\n`);
        return;
      case 'toolCall':
        // A title cannot call tools (utility turns are sent none; this would be a sidecar bug).
        if (this.options.utility) return;
        this.closeThinking();
        this.closeToolLine();
        this.toolCalls++;
        this.report(
          new vscode.LanguageModelToolCallPart(delta.callId, delta.name, isObject(delta.input) ? delta.input : {}),
        );
        return;
      case 'session':
        this.sessionId = delta.sessionId;
        return;
      case 'usage':
        this.usage = delta.usage;
        return;
    }
  }

  /** Ends open blocks; call once after the last delta. */
  finish(): void {
    this.closeThinking();
    this.closeToolLine();
  }

  /** A note about the request (notices in errors.ts), as a quote line of its own. */
  note(text: string): void {
    this.finish();
    this.paragraph();
    this.emit(`> ℹ️ ${text}\n\n`);
  }

  /** Markdown that ends the turn (an explanation of a failure), set apart from what came before. */
  markdown(text: string): void {
    this.finish();
    this.paragraph();
    this.emit(text);
  }

  private toolLinesWanted(): boolean {
    return this.options.showToolActivity && !this.options.utility;
  }

  private thinking(text: string): void {
    const Thinking = this.options.thinkingPart;
    if (!Thinking || !text) return;
    if (this.thinkingId === undefined) this.thinkingId = `cursor-thinking-${++this.thinkingBlocks}`;
    this.reportThinking(new Thinking(text, this.thinkingId));
  }

  private closeThinking(): void {
    const Thinking = this.options.thinkingPart;
    if (!Thinking || this.thinkingId === undefined) return;
    // The Chat view ends a thinking block on this metadata flag (what Copilot's own providers send).
    this.reportThinking(new Thinking('', this.thinkingId, { vscode_reasoning_done: true }));
    this.thinkingId = undefined;
  }

  private reportThinking(part: object): void {
    this.report(asResponsePart(part));
  }

  private closeToolLine(): void {
    if (this.openTool === undefined) return;
    this.openTool = undefined;
    this.emit('\n\n');
  }

  /** Start a new Markdown paragraph, so a quote line neither joins nor swallows the text around it. */
  private paragraph(): void {
    if (this.tail === '' || this.tail.endsWith('\n\n')) return;
    this.emit(this.tail.endsWith('\n') ? '\n' : '\n\n');
  }

  private emit(text: string): void {
    this.report(new vscode.LanguageModelTextPart(text));
    this.tail = (this.tail + text).slice(-2);
  }
}

// The Language Model Chat Provider for vendor `cursor`: the Chat view's calls, translated into
// sidecar requests. What the Chat view really sends is in docs/vscode-provider.md §4 and §5
// (utility requests: §6); client-owned tools (`cursorBridge.tools`) in §10.

import { randomUUID } from 'node:crypto';
import * as vscode from 'vscode';
import type { Logger } from './client';
import {
  conversationIdOf,
  convertMessages,
  isUtilityRequest,
  toolChoiceOf,
  toolDefinitionsOf,
  toolNamesOf,
  type RequestOptions,
} from './convert';
import type { Bridge } from './sidecar-manager';
import { TurnRenderer } from './deltas';
import { NOTICES, renderFailure, toBridgeError } from './errors';
import { encodeMarker, MARKER_MIME } from './session-marker';
import { inferMode, type ModeDecision } from './mode';
import { groupModels, resolveSku, toChatInformation, type ModelCatalog } from './models';
import type { ModelInfo } from './protocol';
import { Request, type ChatSendParams, type ChatSendResult, type InitializeResult, type Usage } from './protocol';
import type { Settings, ToolsSetting } from './settings';
import { asResponsePart, type DataPartCtor, type ThinkingPartCtor } from './optional-parts';
import type { TokenCounter } from './tokens';

export interface ProviderDeps {
  bridge: Bridge;
  catalog: ModelCatalog;
  /** Fires when the catalog's list changed. */
  onDidChangeModels: vscode.Event<void>;
  tokens: TokenCounter;
  settings(): Settings;
  trusted(): boolean;
  /** The folder this turn runs in (folders.ts); undefined: the sidecar's default. */
  workspace(): string | undefined;
  log: Logger;
  thinkingPart(): ThinkingPartCtor | undefined;
  /** Undefined on hosts older than 1.106: no marker, no usage part. */
  dataPart(): DataPartCtor | undefined;
  newTurnId?(): string;
  /** A turn on a Cursor model started / was answered (the walkthrough's steps). */
  onTurn?(phase: 'started' | 'answered'): void;
}

/**
 * How long a silent model-list request waits for a first-ever list (no stored one) before it
 * answers with what there is: the CLI takes 2–3 s to list models on real machines.
 */
export const FIRST_LIST_WAIT_MS = 8_000;

/** The picker's entries: one per base model. */
export function pickerEntries(models: readonly ModelInfo[]) {
  return groupModels(models).map(toChatInformation);
}

/** What `chat/send` gets for this request, and why (for the log and the tests). */
export interface TurnPlan {
  params: ChatSendParams;
  mode: ModeDecision;
  utility: boolean;
  /**
   * Image parts of the new request that are not sent: all of them for a model that takes no
   * images, else those of a type it cannot read (0 for utility requests: a note would become the
   * chat's title, and they send no images).
   */
  imagesNotSent: number;
  /** The model calls the request's tools, which VS Code runs (client-owned tools). */
  clientTools: boolean;
}

/**
 * Whether a request is one for client-owned tools, before asking the sidecar whether it has them:
 * the setting says Copilot's tools and the request offers some.
 */
export function wantsClientTools(options: RequestOptions, setting: ToolsSetting): boolean {
  return setting === 'copilot' && (options.tools?.length ?? 0) > 0;
}

/**
 * `clientTools`: the setting wants them and the sidecar has them (`capabilities.clientTools` ≥ 1).
 * Then the request's tools go along, tool calls and results go as such (not as lines), and the
 * system message stays in the messages: Copilot's own, which explains those tools (the sidecar
 * leaves `system` messages out of other turns' prompts).
 */
export function planTurn(
  model: Pick<vscode.LanguageModelChatInformation, 'id'> &
    Partial<Pick<vscode.LanguageModelChatInformation, 'capabilities'>>,
  messages: readonly vscode.LanguageModelChatRequestMessage[],
  options: RequestOptions,
  settings: Pick<Settings, 'mode' | 'utilityModel'>,
  trusted: boolean,
  turnId: string,
  workspace?: string,
  clientToolsAvailable = false,
): TurnPlan {
  const utility = isUtilityRequest(options);
  const clientTools = clientToolsAvailable && !utility && (options.tools?.length ?? 0) > 0;
  const conversation = convertMessages(messages, { clientTools });
  // Utility requests (titles, progress messages) never touch a session and only need to talk.
  const mode: ModeDecision = utility
    ? { mode: 'ask', reason: 'utility request' }
    : inferMode({
        systemText: conversation.systemText,
        toolNames: toolNamesOf(options),
        setting: settings.mode,
        trusted,
      });
  const conversationId = conversationIdOf(options);
  const params: ChatSendParams = {
    turnId,
    model: utility && settings.utilityModel ? settings.utilityModel : model.id,
    mode: mode.mode,
    messages: conversation.messages,
  };
  if (workspace) params.workspace = workspace;
  if (utility) params.utility = true;
  else {
    if (conversationId) params.conversationId = conversationId;
    if (conversation.sessionId) params.sessionId = conversation.sessionId;
  }
  if (clientTools) {
    params.tools = toolDefinitionsOf(options);
    params.toolChoice = toolChoiceOf(options);
    // VS Code runs several calls of one response, in order.
    params.parallelToolCalls = true;
  }
  // Images go only to a model that takes them (the sidecar says so per model: ACP's agent does,
  // print mode does not); the others are pointed out to the user instead of silently dropped.
  let imagesNotSent = utility ? 0 : conversation.newImages;
  if (!utility && model.capabilities?.imageInput === true && conversation.sendableImages.length > 0) {
    params.images = conversation.sendableImages;
    imagesNotSent -= conversation.sendableImages.length;
  }
  return { params, mode, utility, imagesNotSent, clientTools };
}

/**
 * `usage` data parts are read by Copilot Chat (context window display) and by the Copilot harness
 * (`completion_tokens_details.reasoning_tokens` too) in OpenAI's shape. Reasoning is counted only
 * where the agent counted it: an absent count is not a zero.
 */
export function usagePayload(u: Usage): object {
  const prompt = u.inputTokens + u.cacheReadTokens + u.cacheWriteTokens;
  return {
    prompt_tokens: prompt,
    completion_tokens: u.outputTokens,
    total_tokens: prompt + u.outputTokens,
    prompt_tokens_details: { cached_tokens: u.cacheReadTokens },
    ...(u.reasoningTokens !== undefined ? { completion_tokens_details: { reasoning_tokens: u.reasoningTokens } } : {}),
  };
}

/** Resolves with undefined as soon as `token` fires: a cancelled turn returns at once. */
function untilCancelled<T>(work: Promise<T>, token: vscode.CancellationToken): Promise<T | undefined> {
  return new Promise<T | undefined>((resolve, reject) => {
    const sub = token.onCancellationRequested(() => resolve(undefined));
    work.then(resolve, reject).finally(() => sub.dispose());
  });
}

export class CursorChatProvider implements vscode.LanguageModelChatProvider {
  /** The folder each conversation began in (bounded; a forgotten one just follows the editor). */
  private readonly folderOf = new Map<string, string>();

  readonly onDidChangeLanguageModelChatInformation: vscode.Event<void>;

  constructor(private readonly deps: ProviderDeps) {
    this.onDidChangeLanguageModelChatInformation = deps.onDidChangeModels;
  }

  async provideLanguageModelChatInformation(
    options: vscode.PrepareLanguageModelChatModelOptions,
    _token: vscode.CancellationToken,
  ): Promise<vscode.LanguageModelChatInformation[]> {
    // The picker asks silently and often: answer from the cache, and wait (boundedly) only when
    // there has never been a list.
    if (options.silent) return pickerEntries(await this.deps.catalog.peekOrWait(FIRST_LIST_WAIT_MS));
    try {
      return pickerEntries(await this.deps.catalog.load(false));
    } catch (e) {
      const err = toBridgeError(e);
      this.deps.log.warn(`models/list failed: ${err.kind}: ${err.message}`);
      return pickerEntries(this.deps.catalog.cached ?? []);
    }
  }

  async provideLanguageModelChatResponse(
    model: vscode.LanguageModelChatInformation,
    messages: readonly vscode.LanguageModelChatRequestMessage[],
    options: vscode.ProvideLanguageModelChatResponseOptions,
    progress: vscode.Progress<vscode.LanguageModelResponsePart>,
    token: vscode.CancellationToken,
  ): Promise<void> {
    if (token.isCancellationRequested) return;
    const settings = this.deps.settings();
    const turnId = this.deps.newTurnId?.() ?? `vsc-${randomUUID()}`;
    // The picker entry is a base model; the variant chosen in its menu is the SKU the CLI runs.
    const configuration = (options as { modelConfiguration?: unknown }).modelConfiguration;
    const group = groupModels(this.deps.catalog.cached ?? []).find((g) => g.id === model.id);
    const sku = group ? resolveSku(group, configuration) : model.id;
    // Nothing is reported after a cancel: the Chat view has moved on.
    const report = (part: vscode.LanguageModelResponsePart) => {
      if (!token.isCancellationRequested) progress.report(part);
    };
    // Copilot's tools need a sidecar that has client-owned tools; an older one runs Cursor's own,
    // as before (said in the log). This waits for the sidecar's start, which chat/send would too.
    let clientToolsAvailable = false;
    let toolsNote = '';
    if (wantsClientTools(options, settings.tools)) {
      let capabilities: InitializeResult['capabilities'] | undefined;
      try {
        capabilities = await untilCancelled(this.deps.bridge.capabilities(), token);
      } catch (e) {
        if (token.isCancellationRequested) return;
        return this.failed(e, turnId, false, model, report, this.renderer(report, settings, false));
      }
      if (capabilities === undefined) return;
      clientToolsAvailable = (capabilities.clientTools ?? 0) >= 1;
      if (!clientToolsAvailable) toolsNote = ", Cursor's own tools (this sidecar has no client tools)";
    }
    const { params, mode, utility, imagesNotSent, clientTools } = planTurn(
      { id: sku, capabilities: model.capabilities },
      messages,
      options,
      settings,
      this.deps.trusted(),
      turnId,
      this.deps.workspace(),
      clientToolsAvailable,
    );
    if (clientTools) toolsNote = `, ${params.tools?.length ?? 0} client tools (${params.toolChoice})`;
    // A conversation stays in the folder it began in: Cursor's chats belong to a folder, so
    // following the active editor to another one would start over (with a replay) each time.
    if (params.conversationId) {
      const first = this.folderOf.get(params.conversationId);
      if (first !== undefined) params.workspace = first;
      else if (params.workspace) rememberBounded(this.folderOf, params.conversationId, params.workspace);
    }
    if (!utility) this.deps.onTurn?.('started');
    this.deps.log.info(
      `turn ${turnId}: model ${params.model}${configuration ? ` (${JSON.stringify(configuration)})` : ''}, mode ${params.mode} (${mode.reason})` +
        `${params.workspace ? `, in ${params.workspace}` : ''}` +
        `${params.conversationId ? `, conversation ${params.conversationId}` : ''}` +
        `${params.sessionId ? `, session ${params.sessionId}` : ''}${utility ? ', utility' : ''}, ${params.messages.length} messages` +
        `${imagesNotSent ? `, ${imagesNotSent} image(s) not sent` : ''}${toolsNote}`,
    );

    const renderer = this.renderer(report, settings, utility);
    // Said before the answer, so it is seen while waiting; the text goes to the sidecar regardless.
    if (imagesNotSent > 0) renderer.note(NOTICES.imagesNotSent(imagesNotSent));
    const subscription = this.deps.bridge.onDelta(turnId, (d) => renderer.handle(d));
    let result: ChatSendResult | undefined;
    try {
      // The token also reaches vscode-jsonrpc, which sends `$/cancelRequest` (the sidecar then
      // kills the CLI's process tree); we return without waiting for that answer.
      result = await untilCancelled(this.deps.bridge.request(Request.chatSend, params, token), token);
    } catch (e) {
      if (token.isCancellationRequested) return;
      return this.failed(e, turnId, utility, model, report, renderer);
    } finally {
      subscription.dispose();
    }
    if (result === undefined) {
      this.deps.log.info(`turn ${turnId} cancelled`);
      return;
    }
    renderer.finish();
    // A tool-call stop is not the answer yet: VS Code runs the tools and calls us again.
    const waitsForTools = result.stopReason === 'toolCalls';
    if (waitsForTools && renderer.toolCalls === 0)
      this.deps.log.warn(`turn ${turnId} stopped for tool calls but none came`);
    if (!utility && !waitsForTools) this.deps.onTurn?.('answered');
    const usage = result.usage ?? renderer.usage;
    const DataPart = this.deps.dataPart();
    if (usage && DataPart) {
      report(asResponsePart(new DataPart(new TextEncoder().encode(JSON.stringify(usagePayload(usage))), 'usage')));
    }
    const sessionId = result.sessionId ?? renderer.sessionId;
    if (!utility && sessionId) this.reportMarker(report, model, sessionId);
    this.deps.log.info(
      `turn ${turnId} done in ${result.durationMs} ms${result.resumed ? ' (resumed)' : ''}${sessionId ? `, session ${sessionId}` : ''}` +
        `${waitsForTools ? `, waiting for ${renderer.toolCalls} tool result(s)` : ''}`,
    );
  }

  private renderer(
    report: (part: vscode.LanguageModelResponsePart) => void,
    settings: Settings,
    utility: boolean,
  ): TurnRenderer {
    return new TurnRenderer(report, {
      showToolActivity: settings.showToolActivity,
      thinkingPart: this.deps.thinkingPart(),
      utility,
    });
  }

  /** A failed turn: logged, then thrown or explained as the answer (errors.ts decides which). */
  private failed(
    e: unknown,
    turnId: string,
    utility: boolean,
    model: vscode.LanguageModelChatInformation,
    report: (part: vscode.LanguageModelResponsePart) => void,
    renderer: TurnRenderer,
  ): void {
    const err = toBridgeError(e);
    this.deps.log.warn(
      `turn ${turnId} failed: ${err.kind}: ${err.message}${err.hint ? ` | hint: ${err.hint}` : ''}${err.detail ? ` | detail: ${err.detail}` : ''}`,
    );
    const rendering = renderFailure(err, { utility });
    if (rendering.render === 'throw') throw rendering.error;
    if (rendering.render === 'markdown') {
      renderer.markdown(rendering.markdown);
      // The turn counts as answered; keep its session so the next turn resumes it.
      if (!utility && renderer.sessionId) this.reportMarker(report, model, renderer.sessionId);
    }
  }

  provideTokenCount(
    _model: vscode.LanguageModelChatInformation,
    text: string | vscode.LanguageModelChatRequestMessage,
    _token: vscode.CancellationToken,
  ): Promise<number> {
    return Promise.resolve(this.deps.tokens.count(text));
  }

  /** Our session id, in the one data part the Chat view keeps in history (session-marker.ts). */
  private reportMarker(
    report: (part: vscode.LanguageModelResponsePart) => void,
    model: vscode.LanguageModelChatInformation,
    sessionId: string,
  ): void {
    const DataPart = this.deps.dataPart();
    if (DataPart) report(asResponsePart(new DataPart(encodeMarker(model.id, sessionId), MARKER_MIME)));
  }
}

/** Remember `key → value`, forgetting the oldest entries past `limit`. */
export function rememberBounded(map: Map<string, string>, key: string, value: string, limit = 500): void {
  map.set(key, value);
  while (map.size > limit) {
    const oldest = map.keys().next().value;
    if (oldest === undefined) break;
    map.delete(oldest);
  }
}

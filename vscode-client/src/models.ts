// The model list, as the model picker sees it. VS Code asks for it often and `silent`ly (60 calls in
// one measured session), while the CLI takes seconds to list models: so answers come from a cache
// here (also kept in globalState, so the picker is filled at once after a restart), and the sidecar
// is asked in the background, firing the change event when the list really changed.

import type * as vscode from 'vscode';
import type { Logger } from './client';
import type { ModelInfo } from './protocol';

/** The sidecar gives unknown families this conservative window (protocol.md, models/list). */
const FALLBACK_WINDOW = 128_000;
const ROUTER_FAMILIES: ReadonlySet<string> = new Set(['auto', 'default']);

function formatTokens(n: number): string {
  return n >= 1000 ? `${Math.round(n / 1000)}K` : String(n);
}

export function limitIsGuess(model: ModelInfo): boolean {
  return ROUTER_FAMILIES.has(model.family) || model.family === 'unknown' || model.maxInputTokens === FALLBACK_WINDOW;
}

export function toChatInformation(model: ModelInfo): vscode.LanguageModelChatInformation {
  const window = `${formatTokens(model.maxInputTokens)} tokens in, ${formatTokens(model.maxOutputTokens)} out`;
  let limitNote = '';
  if (ROUTER_FAMILIES.has(model.family)) {
    limitNote = ' Cursor picks the model per request, so the context limit is a conservative guess.';
  } else if (limitIsGuess(model)) {
    limitNote = ' Cursor publishes no context window for this model, so the limit is a conservative guess.';
  }
  return {
    id: model.id,
    name: model.name,
    family: model.family,
    // The CLI has no model versions; the id is the most specific thing a selector can match.
    version: model.id,
    maxInputTokens: model.maxInputTokens,
    maxOutputTokens: model.maxOutputTokens,
    tooltip: `${model.name} via the Cursor CLI (${window}).${limitNote}`,
    detail: model.capabilities.thinking ? 'Cursor · thinking' : 'Cursor',
    // Tools the Chat view offers are not called by us (the CLI runs its own), but without
    // toolCalling the view does not offer the model in agent mode at all.
    capabilities: { toolCalling: true, imageInput: false },
  };
}

/** Where the list survives a restart (the extension's globalState). */
export interface ModelStore {
  get<T>(key: string): T | undefined;
  update(key: string, value: unknown): Thenable<void>;
}

const STORE_KEY = 'cursorBridge.models.v1';

export type ModelFetcher = (refresh: boolean) => Promise<ModelInfo[]>;

export interface CatalogOptions {
  store?: ModelStore;
  /** Where a failure to store the list is reported (nobody awaits the store). */
  log?: Pick<Logger, 'warn'>;
  /** A failed background load is not retried sooner than this (the picker asks constantly). */
  retryAfterMs?: number;
  now?: () => number;
}

export class ModelCatalog {
  private models: ModelInfo[] | undefined;
  /** Fetched from the sidecar in this session (the stored list may be stale). */
  private loaded = false;
  private loading: Promise<ModelInfo[]> | undefined;
  private lastFailure = 0;
  private readonly store: ModelStore | undefined;
  private readonly retryAfterMs: number;
  private readonly now: () => number;

  constructor(
    private readonly fetch: ModelFetcher,
    private readonly onChanged: () => void,
    private readonly o: CatalogOptions = {},
  ) {
    this.store = o.store;
    this.retryAfterMs = o.retryAfterMs ?? 30_000;
    this.now = o.now ?? Date.now;
    const stored = this.store?.get<ModelInfo[]>(STORE_KEY);
    if (Array.isArray(stored) && stored.length > 0) this.models = stored;
  }

  /** What is known now, without waiting for anything. */
  get cached(): readonly ModelInfo[] | undefined {
    return this.models;
  }

  /** The cached list at once; the first call of a session (re)loads it in the background. Never throws. */
  peek(): readonly ModelInfo[] {
    if (!this.loaded && !this.loading && this.now() - this.lastFailure >= this.retryAfterMs) {
      this.load(false).catch(() => undefined);
    }
    return this.models ?? [];
  }

  /** Asks the sidecar (with `refresh`, the CLI itself); concurrent calls share one request. */
  load(refresh: boolean): Promise<ModelInfo[]> {
    if (this.loading && !refresh) return this.loading;
    const loading = this.fetch(refresh).then(
      (models) => {
        this.loaded = true;
        this.set(models);
        return models;
      },
      (err: unknown) => {
        this.lastFailure = this.now();
        throw err;
      },
    );
    this.loading = loading;
    const clear = () => {
      if (this.loading === loading) this.loading = undefined;
    };
    loading.then(clear, clear);
    return loading;
  }

  /** A list the sidecar pushed (`models/changed`): as fresh as a load. */
  replace(models: ModelInfo[]): void {
    this.loaded = true;
    this.set(models);
  }

  /** Forget that the list was loaded (the sidecar restarted with other settings): reload on next use. */
  invalidate(): void {
    this.loaded = false;
    this.lastFailure = 0;
  }

  private set(models: ModelInfo[]): void {
    if (JSON.stringify(models) === JSON.stringify(this.models)) return;
    this.models = models;
    if (this.store) {
      // Only a cache for the next start: a failure costs nothing but that, and is logged.
      Promise.resolve(this.store.update(STORE_KEY, models)).catch((e: unknown) =>
        this.o.log?.warn(`could not store the model list: ${e instanceof Error ? e.message : String(e)}`),
      );
    }
    this.onChanged();
  }
}

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

/** One entry of the model picker: a base model and the SKUs that are its variants (protocol.md, models/list). */
export interface ModelGroup {
  id: string;
  name: string;
  /** In listing order. */
  members: ModelInfo[];
  /** The SKU the CLI uses for the base. */
  defaultSku: ModelInfo;
  /** The picker menu, when there is more than one variant. */
  choice?: VariantChoice;
  /**
   * When the variants differ in effort and in another axis too (the menu is then `variant`):
   * the efforts alone, as a `reasoningEffort` property beside it. VS Code's Copilot harness reads
   * only `reasoningEffort` (its effort list and `configuration.reasoningEffort`).
   */
  effort?: EffortChoice;
}

export interface EffortChoice {
  options: { value: string; label: string }[];
  /** The default SKU's effort. */
  default: string;
}

/** One `configurationSchema` property with `group: "navigation"`: VS Code shows it as a menu in the picker. */
export interface VariantChoice {
  /** `reasoningEffort` when the variants differ only in effort (Copilot's own name), else `variant`. */
  key: 'reasoningEffort' | 'variant';
  title: string;
  options: { value: string; label: string; sku: string }[];
  default: string;
}

const EFFORT_ORDER = ['minimal', 'low', 'medium', 'high', 'xhigh', 'max'];

function rank(m: ModelInfo): number[] {
  const v = m.variant;
  return [v?.effort ? EFFORT_ORDER.indexOf(v.effort) + 1 : 0, v?.fast ? 1 : 0, v?.thinking ? 1 : 0];
}

/** The listed SKUs as picker entries, one per base model, in the order the bases first appear. */
export function groupModels(models: readonly ModelInfo[]): ModelGroup[] {
  const groups = new Map<string, ModelInfo[]>();
  for (const m of models) {
    const base = m.base?.id ?? m.id;
    const members = groups.get(base);
    if (members) {
      if (!members.some((x) => x.id === m.id)) members.push(m);
    } else groups.set(base, [m]);
  }
  return [...groups.entries()].map(([id, members]) => {
    const defaultSku = members.find((m) => m.variant?.default) ?? members.find((m) => m.id === id) ?? members[0];
    const group: ModelGroup = { id, name: defaultSku.base?.name ?? defaultSku.name, members, defaultSku };
    if (members.length > 1) group.choice = choiceOf(members, defaultSku);
    if (group.choice?.key === 'variant') group.effort = effortOf(members, defaultSku);
    return group;
  });
}

function choiceOf(members: ModelInfo[], defaultSku: ModelInfo): VariantChoice {
  const sorted = [...members].sort((a, b) => {
    const [x, y] = [rank(a), rank(b)];
    return x[0] - y[0] || x[1] - y[1] || x[2] - y[2];
  });
  const differs = (f: (v: NonNullable<ModelInfo['variant']>) => unknown) =>
    new Set(members.map((m) => (m.variant ? String(f(m.variant)) : ''))).size > 1;
  const [effort, fast, thinking] = [differs((v) => v.effort), differs((v) => v.fast), differs((v) => v.thinking)];
  const label = (m: ModelInfo) => m.variant?.label ?? m.name;
  if (effort && !fast && !thinking) {
    const value = (m: ModelInfo) => m.variant?.effort ?? 'default';
    return {
      key: 'reasoningEffort',
      title: 'Thinking Effort',
      options: sorted.map((m) => ({ value: value(m), label: label(m), sku: m.id })),
      default: value(defaultSku),
    };
  }
  const title = fast && !effort && !thinking ? 'Speed' : thinking && !effort && !fast ? 'Thinking' : 'Variant';
  return {
    key: 'variant',
    title,
    options: sorted.map((m) => ({ value: m.id, label: label(m), sku: m.id })),
    default: defaultSku.id,
  };
}

/** A SKU's effort as a menu value: the bare SKU runs the CLI's own default. */
const effortValue = (m: ModelInfo) => m.variant?.effort ?? 'default';

/** The efforts of variants that also differ in another axis; none when all have one effort. */
function effortOf(members: ModelInfo[], defaultSku: ModelInfo): EffortChoice | undefined {
  const values = [...new Set(members.map(effortValue))];
  if (values.length < 2) return undefined;
  values.sort((a, b) => EFFORT_ORDER.indexOf(a) - EFFORT_ORDER.indexOf(b));
  const label = (v: string) =>
    v === 'default' ? 'Standard' : v === 'xhigh' ? 'Extra High' : v[0].toUpperCase() + v.slice(1);
  return { options: values.map((v) => ({ value: v, label: label(v) })), default: effortValue(defaultSku) };
}

/**
 * The SKU a request runs: the one its `modelConfiguration` picked, else the base's default. Where
 * a `reasoningEffort` sits beside the `variant` menu, an effort other than the default's moves the
 * picked SKU to that effort, keeping its other axes where such a SKU exists (VS Code merges the
 * defaults into the configuration, so a default effort says nothing).
 */
export function resolveSku(group: ModelGroup, configuration: unknown): string {
  const choice = group.choice;
  if (!choice || !configuration || typeof configuration !== 'object') return group.defaultSku.id;
  const config = configuration as Record<string, unknown>;
  const sku = choice.options.find((o) => o.value === config[choice.key])?.sku ?? group.defaultSku.id;
  const effort = config.reasoningEffort;
  if (!group.effort || typeof effort !== 'string' || effort === group.effort.default) return sku;
  const picked = group.members.find((m) => m.id === sku) ?? group.defaultSku;
  const withEffort = group.members.filter((m) => effortValue(m) === effort);
  const axes = (m: ModelInfo) => [m.variant?.fast ?? false, m.variant?.thinking ?? false].join();
  return (withEffort.find((m) => axes(m) === axes(picked)) ?? withEffort[0])?.id ?? sku;
}

/** What VS Code reads beyond the stable fields (copied by the 1.139 extension host without a proposal). */
export type CursorChatInformation = vscode.LanguageModelChatInformation & {
  configurationSchema?: object;
  isUserSelectable?: boolean;
  isBYOK?: boolean;
};

export function toChatInformation(group: ModelGroup | ModelInfo): CursorChatInformation {
  const g = 'members' in group ? group : groupModels([group])[0];
  const model = g.defaultSku;
  const window = `${formatTokens(model.maxInputTokens)} tokens in, ${formatTokens(model.maxOutputTokens)} out`;
  let limitNote = '';
  if (ROUTER_FAMILIES.has(model.family)) {
    limitNote = ' Cursor picks the model per request, so the context limit is a conservative guess.';
  } else if (limitIsGuess(model)) {
    limitNote = ' Cursor publishes no context window for this model, so the limit is a conservative guess.';
  }
  const variants = g.choice ? ` ${g.members.length} variants (${g.choice.title}); default ${model.id}.` : '';
  const info: CursorChatInformation = {
    id: g.id,
    name: g.name,
    family: model.family,
    // The CLI has no model versions; the id is the most specific thing a selector can match.
    version: g.id,
    maxInputTokens: model.maxInputTokens,
    maxOutputTokens: model.maxOutputTokens,
    tooltip: `${g.name} via the Cursor CLI (${window}).${variants}${limitNote}`,
    detail: g.members.some((m) => m.capabilities.thinking) ? 'Cursor · thinking' : 'Cursor',
    // Declared whatever `cursorBridge.tools` says: with `copilot` the model really calls the
    // Chat view's tools; with `cursor` it calls none (the CLI runs its own), but without
    // toolCalling the view (and the Agents window) would not offer the model in agent mode at all.
    // Images: what the sidecar says of every SKU (the agent's, not the catalogue's: ACP's agent
    // takes them, print mode does not). The Copilot harness reads this as `vision`.
    capabilities: { toolCalling: true, imageInput: g.members.every((m) => m.capabilities.imageInput) },
    // The user's own models (their Cursor plan): the Agents window lists only these.
    isUserSelectable: true,
    isBYOK: true,
  };
  const c = g.choice;
  if (c) {
    info.configurationSchema = {
      type: 'object',
      properties: {
        [c.key]: {
          type: 'string',
          title: c.title,
          enum: c.options.map((o) => o.value),
          enumItemLabels: c.options.map((o) => o.label),
          enumDescriptions: c.options.map((o) => `Cursor model ${o.sku}`),
          default: c.default,
          // Puts the menu into the model picker itself (chatview: part B).
          group: 'navigation',
        },
        // Beside the variant menu, not in the picker (one menu there is enough): what the
        // Language Models editor and the Copilot harness offer as the effort.
        ...(g.effort
          ? {
              reasoningEffort: {
                type: 'string',
                title: 'Thinking Effort',
                enum: g.effort.options.map((o) => o.value),
                enumItemLabels: g.effort.options.map((o) => o.label),
                default: g.effort.default,
              },
            }
          : {}),
      },
    };
  }
  return info;
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

  /**
   * Like peek(), but when no list is known at all (a first start: nothing stored) and one is being
   * loaded, waits for it up to `boundMs`: an extension that selects Cursor models once at start-up
   * gets them, instead of an empty answer the moment before the list arrives.
   */
  async peekOrWait(boundMs: number): Promise<readonly ModelInfo[]> {
    const now = this.peek();
    const loading = this.loading;
    if (now.length > 0 || !loading) return now;
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([loading.catch(() => undefined), new Promise<void>((r) => (timer = setTimeout(r, boundMs)))]);
    clearTimeout(timer);
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

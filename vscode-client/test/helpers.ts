// Shared test helpers: fixture loading (requests shaped like what VS Code 1.139's Chat view sends,
// see fixtures/README.md) and small fakes. Test files are bundled to out/test/, so fixtures are
// found relative to that folder.

import * as fs from 'node:fs';
import * as path from 'node:path';
import type * as vscode from 'vscode';
// The same module the `vscode` import resolves to in the test bundle (scripts/test.mjs).
import * as stub from './vscode-stub';
import type { ChatMessage, Mode } from '../src/protocol';

export const PACKAGE_ROOT = path.resolve(__dirname, '..', '..');
export const REPO_ROOT = path.resolve(PACKAGE_ROOT, '..');
export const FIXTURES = path.join(PACKAGE_ROOT, 'test', 'fixtures');

export function fixtureText(rel: string): string {
  return fs.readFileSync(path.join(FIXTURES, rel), 'utf8');
}

export function toolNames(set: string): string[] {
  return (JSON.parse(fixtureText(`tools/${set}.json`)) as { names: string[] }).names;
}

/** "@file:<path>" → that fixture file's text; anything else as is. */
function resolveText(value: string): string {
  return value.startsWith('@file:') ? fixtureText(value.slice('@file:'.length)) : value;
}

type FixturePart =
  | { text: string }
  | { data: { mimeType: string; text: string } }
  | { toolCall: { callId: string; name: string; input: object } }
  | {
      toolResult: {
        callId: string;
        content: string[];
        isError?: boolean;
        class?: 'LanguageModelToolResultPart2' | 'plain';
      };
    }
  | { thinking: { value: string; id?: string } };

interface FixtureMessage {
  role: number;
  name?: string;
  content: FixturePart[];
}

interface RequestFixture {
  description: string;
  model: { id: string };
  messages: FixtureMessage[];
  options: {
    toolMode: number;
    requestInitiator?: string;
    tools?: string | never[];
    modelOptions?: Record<string, unknown>;
  };
  expect: {
    utility: boolean;
    mode: Mode;
    conversationId: string | null;
    sessionId: string | null;
    messages: ChatMessage[];
  };
  /** What `planTurn` sends when the sidecar has client-owned tools (the rest of `expect` holds too). */
  expectClientTools?: { toolChoice: string; messages: ChatMessage[] };
}

export function buildPart(p: FixturePart): unknown {
  if ('text' in p) return new stub.LanguageModelTextPart(resolveText(p.text));
  if ('data' in p) return new stub.LanguageModelDataPart(new TextEncoder().encode(p.data.text), p.data.mimeType);
  if ('toolCall' in p) return new stub.LanguageModelToolCallPart(p.toolCall.callId, p.toolCall.name, p.toolCall.input);
  if ('toolResult' in p) {
    const { callId, isError } = p.toolResult;
    const content = p.toolResult.content.map((t) => new stub.LanguageModelTextPart(t));
    // `plain`: a part from another copy of the API classes, recognisable only by its shape.
    if (p.toolResult.class === 'plain') return { callId, content, isError };
    if (p.toolResult.class === 'LanguageModelToolResultPart2')
      return new stub.LanguageModelToolResultPart2(callId, content, isError);
    return new stub.LanguageModelToolResultPart(callId, content);
  }
  return new stub.LanguageModelThinkingPart(p.thinking.value, p.thinking.id);
}

export interface LoadedRequest {
  name: string;
  description: string;
  model: vscode.LanguageModelChatInformation;
  messages: vscode.LanguageModelChatRequestMessage[];
  /** With `requestInitiator`, which VS Code 1.139 passes at run time (not in the stable types). */
  options: vscode.ProvideLanguageModelChatResponseOptions & { requestInitiator?: string };
  expect: RequestFixture['expect'];
  expectClientTools?: RequestFixture['expectClientTools'];
}

export function model(id: string): vscode.LanguageModelChatInformation {
  return {
    id,
    name: id,
    family: id,
    version: id,
    maxInputTokens: 200_000,
    maxOutputTokens: 32_768,
    capabilities: { toolCalling: true },
  };
}

export function loadRequest(name: string): LoadedRequest {
  const f = JSON.parse(fixtureText(`requests/${name}.json`)) as RequestFixture;
  const tools =
    typeof f.options.tools === 'string'
      ? toolNames(f.options.tools.replace(/^@tools:/, '')).map((n) => ({
          name: n,
          description: `the ${n} tool`,
          inputSchema: {},
        }))
      : f.options.tools;
  return {
    name,
    description: f.description,
    model: model(f.model.id),
    messages: f.messages.map((m) => ({
      // The Chat view sends role 3 (System), which the stable enum does not have.
      role: m.role as vscode.LanguageModelChatMessageRole,
      name: m.name,
      content: m.content.map(buildPart),
    })),
    options: {
      toolMode: f.options.toolMode as vscode.LanguageModelChatToolMode,
      modelOptions: f.options.modelOptions ?? {},
      ...(tools ? { tools } : {}),
      ...(f.options.requestInitiator ? { requestInitiator: f.options.requestInitiator } : {}),
    },
    expect: { ...f.expect, messages: f.expect.messages.map((m) => ({ ...m, text: resolveText(m.text) })) },
    ...(f.expectClientTools
      ? {
          expectClientTools: {
            ...f.expectClientTools,
            messages: f.expectClientTools.messages.map((m) => ({ ...m, text: resolveText(m.text) })),
          },
        }
      : {}),
  };
}

export function requestFixtures(): string[] {
  return fs
    .readdirSync(path.join(FIXTURES, 'requests'))
    .filter((f) => f.endsWith('.json'))
    .map((f) => f.replace(/\.json$/, ''))
    .sort();
}

/** `ExtensionContext.globalState`, in memory. */
export function memento() {
  const data = new Map<string, unknown>();
  return {
    get: <T>(k: string) => data.get(k) as T | undefined,
    update: (k: string, v: unknown) => (data.set(k, v), Promise.resolve()),
    keys: () => [...data.keys()],
  };
}

/** `ExtensionContext.secrets`, in memory, firing `onDidChange` like the real one. */
export function secrets() {
  const data = new Map<string, string>();
  const changed = new stub.EventEmitter<{ key: string }>();
  return {
    data,
    get: (k: string) => Promise.resolve(data.get(k)),
    store: (k: string, v: string) => (data.set(k, v), changed.fire({ key: k }), Promise.resolve()),
    delete: (k: string) => (data.delete(k), changed.fire({ key: k }), Promise.resolve()),
    onDidChange: changed.event,
  };
}

/** The parts of `vscode.ExtensionContext` that `activate` uses. */
export function fakeContext(extensionPath: string, store = secrets()) {
  return {
    subscriptions: [] as { dispose(): unknown }[],
    extensionPath,
    extensionMode: stub.ExtensionMode.Production,
    globalState: memento(),
    secrets: store,
    extension: { packageJSON: { version: '0.1.0' } },
  };
}

/** What was logged to the output channel `name` (the stub's channels). */
export function channelLines(name = 'Cursor Bridge'): string[] {
  return stub.stubState.channels.find((c) => c.name === name)?.lines ?? [];
}

/**
 * Runs `work`, then waits a moment: the unhandled rejections seen meanwhile (Node's
 * `unhandledRejection` event, which would otherwise crash the extension host's error reporting).
 */
export async function unhandledRejectionsDuring(work: () => Promise<unknown>, settleMs = 100): Promise<unknown[]> {
  const seen: unknown[] = [];
  const listener = (reason: unknown) => void seen.push(reason);
  process.on('unhandledRejection', listener);
  try {
    await work();
    await new Promise((r) => setTimeout(r, settleMs));
  } finally {
    process.off('unhandledRejection', listener);
  }
  return seen;
}

/** A silent logger that remembers what was logged. */
export function memoryLog() {
  const lines: string[] = [];
  const at = (level: string) => (m: string) => void lines.push(`${level}: ${m}`);
  return { lines, trace: at('trace'), debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

// The real sidecar and the CLI double, built by `cargo build` (which `cargo xtask test` runs
// first). Tests that need them are skipped with the reason when they are missing, unless
// CURSOR_BRIDGE_REQUIRE_BINARIES=1 (set by xtask) makes that a failure.
const exe = (name: string) =>
  path.join(REPO_ROOT, 'target', 'debug', process.platform === 'win32' ? `${name}.exe` : name);
export const SIDECAR_BIN = exe('cursor-bridge');
export const DOUBLE_BIN = exe('cursor-agent-double');

export function binariesOrSkip(): false | string {
  if (fs.existsSync(SIDECAR_BIN) && fs.existsSync(DOUBLE_BIN)) return false;
  if (process.env.CURSOR_BRIDGE_REQUIRE_BINARIES === '1') {
    throw new Error(`${SIDECAR_BIN} and ${DOUBLE_BIN} are required (run cargo build first)`);
  }
  return `needs ${SIDECAR_BIN} and ${DOUBLE_BIN}: run \`cargo build\``;
}

/** A `[[double:{…}]]` directive: the CLI double's per-prompt script (cli-double/src/scenario.rs). */
export function directed(text: string, scenario: object): string {
  return `[[double:${JSON.stringify(scenario)}]]\n${text}`;
}

export async function until(what: string, check: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export function alive(pid: number | undefined): boolean {
  if (pid === undefined) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

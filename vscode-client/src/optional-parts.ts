// API classes newer than our engine floor (`^1.104.0`, whose @types/vscode we compile against):
// looked up at run time and declared here.
// - LanguageModelThinkingPart: proposed (vscode.proposed.languageModelThinkingPart.d.ts); VS Code
//   1.139 exports it without a proposal flag and the Chat view renders it as a collapsible block.
// - LanguageModelDataPart: stable since 1.106. Without it there is no session marker and no usage
//   part; sessions then resume by the conversation id alone.
// - LanguageModelToolResultPart2: what VS Code 1.139 builds tool results with (it also passes
//   `instanceof LanguageModelToolResultPart` there, but need not in every version).

import * as vscode from 'vscode';

export type ThinkingPartCtor = new (
  value: string | string[],
  id?: string,
  metadata?: { readonly [key: string]: unknown },
) => object;

export interface DataPartLike {
  readonly data: Uint8Array;
  readonly mimeType: string;
}
export type DataPartCtor = new (data: Uint8Array, mimeType: string) => DataPartLike;

function lookup(name: string): unknown {
  const value = (vscode as unknown as Record<string, unknown>)[name];
  return typeof value === 'function' ? value : undefined;
}

export function thinkingPartCtor(): ThinkingPartCtor | undefined {
  return lookup('LanguageModelThinkingPart') as ThinkingPartCtor | undefined;
}

export function dataPartCtor(): DataPartCtor | undefined {
  return lookup('LanguageModelDataPart') as DataPartCtor | undefined;
}

export function toolResultPart2Ctor(): (abstract new (...args: never[]) => object) | undefined {
  return lookup('LanguageModelToolResultPart2') as (abstract new (...args: never[]) => object) | undefined;
}

/** Parts the host accepts although the 1.104 response-part type does not name them. */
export function asResponsePart(part: object): vscode.LanguageModelResponsePart {
  return part as vscode.LanguageModelResponsePart;
}

// Which CLI mode a Chat view request wants. Copilot Chat says so in its system message for Ask,
// Plan and custom agents; Agent mode has no such line. The tool list is the fallback: it also
// tells the modes apart, but it changes (extensions and MCP servers add tools, the person can pick
// tools), so only the presence of kinds of tools is used, never counts or exact lists.
// Sources: docs/vscode-provider.md §5.4 (telling the mode), with §5.1 (modes and tool lists) and
// §5.2 (the system message).

import type { Mode } from './protocol';

export type ModeSetting = 'auto' | Mode;

/** Tools that change the workspace or run things: a request offering any of them wants agent mode. */
export const WRITE_TOOLS: ReadonlySet<string> = new Set([
  'create_file',
  'create_directory',
  'replace_string_in_file',
  'insert_edit_into_file',
  'edit_notebook_file',
  'run_in_terminal',
  'create_and_run_task',
  'run_vscode_command',
  'install_extension',
  'kill_terminal',
  'apply_patch',
  'multi_replace_string_in_file',
]);

/** Offered in Plan mode (and Agent mode), not in Ask mode. */
export const SUBAGENT_TOOL = 'runSubagent';

const MODE_LINE = /You are currently running in "([^"]+)" mode\./;

export interface ModeInput {
  /** The system message(s) of the request, joined. */
  systemText: string;
  /** Names of the tools the request offers. */
  toolNames: readonly string[];
  /** `cursorBridge.mode`. */
  setting: ModeSetting;
  /** Workspace trust: untrusted workspaces never get agent (or plan) mode. */
  trusted: boolean;
}

export interface ModeDecision {
  mode: Mode;
  /** Why, for the log. */
  reason: string;
}

export function inferMode(input: ModeInput): ModeDecision {
  // Ask is the only mode that cannot change the workspace or run commands.
  if (!input.trusted) return { mode: 'ask', reason: 'untrusted workspace' };
  if (input.setting !== 'auto') return { mode: input.setting, reason: 'cursorBridge.mode setting' };

  const hasWriteTool = input.toolNames.some((t) => WRITE_TOOLS.has(t));
  const named = MODE_LINE.exec(input.systemText)?.[1];
  if (named !== undefined) {
    switch (named.trim().toLowerCase()) {
      case 'ask':
        return { mode: 'ask', reason: 'system message: Ask mode' };
      case 'plan':
        return { mode: 'plan', reason: 'system message: Plan mode' };
      case 'agent':
        return { mode: 'agent', reason: 'system message: Agent mode' };
      default:
        // A custom agent: read-only unless its tool set lets it edit or run things.
        return hasWriteTool
          ? { mode: 'agent', reason: `custom agent "${named}" with write tools` }
          : { mode: 'ask', reason: `custom agent "${named}" without write tools` };
    }
  }
  if (hasWriteTool) return { mode: 'agent', reason: 'write tools offered' };
  if (input.toolNames.includes(SUBAGENT_TOOL)) return { mode: 'plan', reason: `${SUBAGENT_TOOL} without write tools` };
  return { mode: 'ask', reason: 'no write tools offered' };
}

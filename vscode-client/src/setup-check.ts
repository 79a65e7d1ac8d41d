// Cursor Bridge: Check Setup. The sidecar's `doctor` (the CLI, its version and login, the models,
// trust, the backend, the state folder) plus what only VS Code knows: Restricted Mode, the utility
// model setting people without Copilot need, the Copilot harness's bridge setting, the Agents
// window allow-list, a GitHub sign-in (not required). The report is Markdown, shown in a webview
// whose fix links run a fix only after the person agrees (a modal), and which can be copied.

import * as vscode from 'vscode';
import { PROBE_CHOICES, PROBE_CONSENT, probeChoice, renderProbe } from './probe-report';
import type { Check, CheckStatus, DoctorResult, ProbeResult } from './protocol';

/** One line of the report; `fix` says what to do, `action` is a fix the extension can apply. */
export interface SetupItem {
  id: string;
  title: string;
  status: CheckStatus;
  summary: string;
  fix?: string;
  action?: FixId;
}

export interface SetupSection {
  title: string;
  items: SetupItem[];
}

/** Fixes the extension can apply, each after the person agreed to exactly that change. */
export type FixId =
  | 'utilityMainAgent'
  | 'agentHostByok'
  | 'agentsWindow'
  | 'trust'
  | 'login'
  | 'installCli'
  | 'cliPathSetting'
  | 'setApiKey'
  | 'showLogs';

export const EXTENSION_ID = 'cursor-bridge.cursor-bridge';

/** What VS Code tells us, gathered once per report (a plain object, so the checks are testable). */
export interface HostFacts {
  trusted: boolean;
  /** `chat.byokUtilityModelDefault` as set (undefined: not set). */
  byokUtilityModelDefault: unknown;
  /** `chat.utilityModel`, when it names a Cursor model the utility requests already reach us. */
  utilityModel: unknown;
  /** `chat.agentHost.byokModels.enabled` as explicitly set (undefined: the default). */
  agentHostByok: unknown;
  /** `extensions.supportAgentsWindow`. */
  agentsWindow: unknown;
  githubSignedIn: boolean;
  /**
   * Where this window runs: the web build (code-server, vscode.dev) and remote windows have an
   * agent host that extension models cannot reach (docs/vscode-provider.md §16); undefined: local.
   */
  window?: { kind: 'web' | 'remote'; name?: string };
}

export function vscodeChecks(f: HostFacts): SetupItem[] {
  const items: SetupItem[] = [];
  items.push(
    f.trusted
      ? {
          id: 'restrictedMode',
          title: 'Restricted Mode',
          status: 'ok',
          summary: 'The workspace is trusted: agent mode can edit files and run commands.',
        }
      : {
          id: 'restrictedMode',
          title: 'Restricted Mode',
          status: 'warn',
          summary:
            'The workspace is in Restricted Mode: Cursor models only answer questions (ask mode), in a private scratch folder.',
          fix: 'Trust the folder if you trust its contents.',
          action: 'trust',
        },
  );
  const cursorUtility = typeof f.utilityModel === 'string' && f.utilityModel.startsWith('cursor/');
  if (f.byokUtilityModelDefault === 'mainAgent' || cursorUtility) {
    items.push({
      id: 'utilityModel',
      title: 'Utility model',
      status: 'ok',
      summary: cursorUtility
        ? `Chat titles and progress messages go to ${String(f.utilityModel)}.`
        : 'Chat titles and progress messages go to the selected model (`chat.byokUtilityModelDefault` is "mainAgent").',
    });
  } else {
    items.push({
      id: 'utilityModel',
      title: 'Utility model',
      status: f.githubSignedIn ? 'info' : 'warn',
      summary: f.githubSignedIn
        ? 'Chat titles and progress messages use Copilot’s own models.'
        : 'Without GitHub Copilot, VS Code says "No utility model is configured" and chats get no titles.',
      fix: 'Set `chat.byokUtilityModelDefault` to "mainAgent", so these small requests go to the Cursor model you picked.',
      action: 'utilityMainAgent',
    });
  }
  items.push(
    f.window
      ? {
          id: 'agentHostByok',
          title: 'Copilot harness',
          status: 'warn',
          summary:
            f.window.kind === 'web'
              ? 'This is VS Code for the Web: its Copilot harness (agent host) cannot reach extension models, so Cursor models are missing when "Copilot" is the session target.'
              : `This is a remote window (${f.window.name ?? 'remote'}): a remote agent host has no extension models, so Cursor models are missing when "Copilot" is the session target.`,
          fix: 'Pick "Local" as the session target: Cursor models work there. The Copilot harness and the Agents window need desktop VS Code on this machine.',
        }
      : f.agentHostByok === false
        ? {
            id: 'agentHostByok',
            title: 'Copilot harness',
            status: 'warn',
            summary:
              '`chat.agentHost.byokModels.enabled` is off: Cursor models do not appear when a chat runs in the Copilot harness.',
            fix: 'Turn `chat.agentHost.byokModels.enabled` on (the agent host restarts).',
            action: 'agentHostByok',
          }
        : f.agentHostByok === true
          ? {
              id: 'agentHostByok',
              title: 'Copilot harness',
              status: 'ok',
              summary: '`chat.agentHost.byokModels.enabled` is on: Cursor models also serve the Copilot harness.',
            }
          : {
              id: 'agentHostByok',
              title: 'Copilot harness',
              status: 'info',
              summary:
                '`chat.agentHost.byokModels.enabled` is not set; some VS Code builds need it on before Cursor models appear in the Copilot harness (the Local harness never needs it).',
              fix: 'Turn it on if Cursor models are missing when "Copilot" is the session target.',
              action: 'agentHostByok',
            },
  );
  const allowed =
    typeof f.agentsWindow === 'object' &&
    f.agentsWindow !== null &&
    (f.agentsWindow as Record<string, unknown>)[EXTENSION_ID] === true;
  items.push(
    allowed
      ? {
          id: 'agentsWindow',
          title: 'Agents window',
          status: 'ok',
          summary: 'Cursor Bridge is allowed in the Agents window.',
        }
      : {
          id: 'agentsWindow',
          title: 'Agents window',
          status: 'info',
          summary: 'The Agents window loads only allow-listed extensions, so Cursor models are not offered there.',
          fix: `Add "${EXTENSION_ID}": true to \`extensions.supportAgentsWindow\` (and install the extension in the default profile).`,
          action: 'agentsWindow',
        },
  );
  items.push({
    id: 'github',
    title: 'GitHub sign-in',
    status: 'info',
    summary: f.githubSignedIn
      ? 'Signed in to GitHub (not needed by Cursor Bridge).'
      : 'Not signed in to GitHub. Not needed: Cursor models answer without a GitHub account or Copilot plan.',
    // VS Code's chat set-up runs instead of the request while it knows no BYOK model yet
    // (docs/vscode-provider.md §13.4): what to do when that dialog comes.
    ...(f.githubSignedIn
      ? {}
      : {
          fix: 'If "Sign in to use GitHub Copilot" opens instead of an answer, close it, open the model picker (VS Code then loads the Cursor models) and send again.',
        }),
  });
  return items;
}

/** The sidecar's checks; which of them the extension can fix itself. */
export function sidecarItems(report: DoctorResult): SetupItem[] {
  const actionOf = (c: Check): FixId | undefined => {
    if (c.status !== 'fail' && c.status !== 'warn') return undefined;
    // The sidecar names the setting when `cursorBridge.cliPath` points at nothing: the fix is the
    // setting, not a reinstall.
    if (c.id === 'cli' && c.summary.includes('cursorBridge.cliPath')) return 'cliPathSetting';
    if (c.id === 'cli' || c.id === 'cliVersion') return 'installCli';
    if (c.id === 'login') return 'login';
    if (c.id === 'workspaceTrust') return 'trust';
    return undefined;
  };
  return report.checks.map((c) => ({
    id: c.id,
    title: c.title,
    status: c.status,
    summary: c.summary,
    fix: c.fix,
    action: actionOf(c),
  }));
}

// Text marks, not emoji: they render in every font (emoji fonts are missing on many Linux set-ups).
const MARK: Record<CheckStatus, string> = { ok: '✓', warn: '⚠', fail: '✗', info: 'ℹ' };

export const FIX_LABELS: Record<FixId, string> = {
  utilityMainAgent: 'Set chat.byokUtilityModelDefault to "mainAgent"',
  agentHostByok: 'Turn on chat.agentHost.byokModels.enabled',
  agentsWindow: 'Allow Cursor Bridge in the Agents window',
  trust: 'Manage Workspace Trust',
  login: 'Run `agent login` in a terminal',
  installCli: 'Install or update the Cursor CLI in a terminal',
  cliPathSetting: 'Open the cursorBridge.cliPath setting',
  setApiKey: 'Set API Key',
  showLogs: 'Show Logs',
};

/** The report as Markdown. Fix links are `#fix-<id>`: the webview turns them into requests. */
export function renderReport(sections: SetupSection[]): string {
  const all = sections.flatMap((s) => s.items);
  const failed = all.filter((i) => i.status === 'fail').length;
  const warned = all.filter((i) => i.status === 'warn').length;
  const lines = ['# Cursor Bridge: Check Setup', ''];
  lines.push(
    failed
      ? `**${failed} problem${failed === 1 ? '' : 's'} to fix** before Cursor models answer${warned ? `, and ${warned} warning${warned === 1 ? '' : 's'}` : ''}.`
      : warned
        ? `**Cursor models work.** ${warned} thing${warned === 1 ? '' : 's'} could be better.`
        : '**Everything Cursor models need is in place.**',
  );
  for (const section of sections) {
    if (!section.items.length) continue;
    lines.push('', `## ${section.title}`, '');
    for (const i of section.items) {
      lines.push(`- ${MARK[i.status]} **${i.title}:** ${i.summary}`);
      if (i.fix && i.status !== 'ok') lines.push(`  - Fix: ${i.fix}`);
      if (i.action && i.status !== 'ok') lines.push(`  - [${FIX_LABELS[i.action]}](#fix-${i.action})`);
    }
  }
  lines.push(
    '',
    '---',
    '',
    'Run **Cursor Bridge: Check Setup** again after a fix. The same sidecar checks run in a terminal: `cursor-bridge doctor`.',
    '',
  );
  return lines.join('\n');
}

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c);

/** The webview page: the rendered Markdown, the fix links posting their id, Copy and Run Again. */
export function reportHtml(
  bodyHtml: string,
  nonce: string,
  probe: { can: boolean; done: boolean } = { can: false, done: false },
): string {
  return `<!DOCTYPE html><html><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'nonce-${nonce}';">
<style>body{font-family:var(--vscode-font-family);font-size:var(--vscode-font-size);color:var(--vscode-foreground);padding:0 24px 24px;max-width:60em;line-height:1.5}
a{color:var(--vscode-textLink-foreground)} code{font-family:var(--vscode-editor-font-family)}
a[href^="#fix-"]{display:inline-block;padding:2px 10px;border-radius:2px;background:var(--vscode-button-background);color:var(--vscode-button-foreground);text-decoration:none}
.bar{margin:16px 0}.bar button{margin-right:8px;padding:4px 12px;background:var(--vscode-button-secondaryBackground);color:var(--vscode-button-secondaryForeground);border:none;cursor:pointer}</style>
</head><body><div class="bar"><button id="again">Run Again</button><button id="copy">Copy as Markdown</button>${probe.can ? '<button id="probe">Probe the Cursor CLI…</button>' : ''}${probe.done ? '<button id="copyProbe">Copy Probe Report (JSON)</button>' : ''}</div>
<div id="report">${bodyHtml}</div>
<script nonce="${nonce}">const vscode=acquireVsCodeApi();
document.addEventListener('click',(e)=>{const a=e.target.closest('a');if(!a)return;const h=a.getAttribute('href')||'';if(h.startsWith('#fix-')){e.preventDefault();vscode.postMessage({fix:h.slice(5)});}});
document.getElementById('again').onclick=()=>vscode.postMessage({again:true});
document.getElementById('copy').onclick=()=>vscode.postMessage({copy:true});
for(const id of ['probe','copyProbe']){const b=document.getElementById(id);if(b)b.onclick=()=>vscode.postMessage({[id]:true});}</script></body></html>`;
}

/** Markdown to HTML: VS Code's own renderer (the built-in Markdown extension), else preformatted text. */
export async function markdownToHtml(markdown: string): Promise<string> {
  try {
    const html = await vscode.commands.executeCommand<string>('markdown.api.render', markdown);
    if (typeof html === 'string' && html.length) return html;
  } catch {
    // The built-in Markdown extension is disabled: plain text still reads fine.
  }
  return `<pre>${escapeHtml(markdown)}</pre>`;
}

export function hostFacts(githubSignedIn: boolean): HostFacts {
  const chat = vscode.workspace.getConfiguration('chat');
  const explicit = (section: vscode.WorkspaceConfiguration, key: string) => {
    const i = section.inspect(key);
    return i?.workspaceFolderValue ?? i?.workspaceValue ?? i?.globalValue;
  };
  return {
    trusted: vscode.workspace.isTrusted,
    byokUtilityModelDefault: explicit(chat, 'byokUtilityModelDefault'),
    utilityModel: explicit(chat, 'utilityModel'),
    agentHostByok: explicit(chat, 'agentHost.byokModels.enabled'),
    agentsWindow: explicit(vscode.workspace.getConfiguration('extensions'), 'supportAgentsWindow'),
    githubSignedIn,
    window:
      vscode.env.uiKind === vscode.UIKind.Web
        ? { kind: 'web' }
        : vscode.env.remoteName
          ? { kind: 'remote', name: vscode.env.remoteName }
          : undefined,
  };
}

/** A GitHub session this extension can see, without prompting anyone. */
export async function githubSignedIn(): Promise<boolean> {
  try {
    const accounts = (
      vscode.authentication as unknown as { getAccounts?: (id: string) => Thenable<readonly unknown[]> }
    ).getAccounts;
    if (accounts) return (await accounts('github')).length > 0;
    return !!(await vscode.authentication.getSession('github', ['read:user'], { silent: true }));
  } catch {
    return false;
  }
}

/** Applies a fix after asking; true when something changed. */
export async function applyFix(
  id: FixId,
  run: (command: string, ...args: unknown[]) => Thenable<unknown>,
): Promise<boolean> {
  const ask = async (what: string, button: string) =>
    (await vscode.window.showWarningMessage(what, { modal: true }, button)) === button;
  const user = vscode.ConfigurationTarget.Global;
  switch (id) {
    case 'utilityMainAgent':
      if (
        !(await ask(
          'Set "chat.byokUtilityModelDefault" to "mainAgent" in your user settings? Chat titles and progress messages then go to the Cursor model you picked.',
          'Set',
        ))
      )
        return false;
      await vscode.workspace.getConfiguration('chat').update('byokUtilityModelDefault', 'mainAgent', user);
      return true;
    case 'agentHostByok':
      if (
        !(await ask(
          'Turn on "chat.agentHost.byokModels.enabled" in your user settings? Cursor models then also serve chats in the Copilot harness.',
          'Turn On',
        ))
      )
        return false;
      await vscode.workspace.getConfiguration('chat').update('agentHost.byokModels.enabled', true, user);
      return true;
    case 'agentsWindow': {
      if (!(await ask(`Add "${EXTENSION_ID}": true to "extensions.supportAgentsWindow" in your user settings?`, 'Add')))
        return false;
      const section = vscode.workspace.getConfiguration('extensions');
      const current = section.inspect<Record<string, boolean>>('supportAgentsWindow')?.globalValue ?? {};
      await section.update('supportAgentsWindow', { ...current, [EXTENSION_ID]: true }, user);
      return true;
    }
    case 'login':
    case 'installCli': {
      const line =
        id === 'login'
          ? 'agent login'
          : process.platform === 'win32'
            ? "irm 'https://cursor.com/install?win32=true' | iex"
            : 'curl https://cursor.com/install -fsS | bash';
      if (!(await ask(`Open a terminal and run \`${line}\`?`, 'Open Terminal'))) return false;
      const terminal = vscode.window.createTerminal({ name: 'Cursor CLI' });
      terminal.show();
      terminal.sendText(line);
      return true;
    }
    case 'cliPathSetting':
      await run('workbench.action.openSettings', 'cursorBridge.cliPath');
      return false;
    case 'trust':
      await run('workbench.trust.manage');
      return false;
    case 'setApiKey':
      await run('cursorBridge.setApiKey');
      return true;
    case 'showLogs':
      await run('cursorBridge.showLogs');
      return false;
  }
}

export interface CheckSetupDeps {
  /** The sidecar's `doctor` result (throws when the sidecar cannot run it). */
  doctor(): Promise<DoctorResult>;
  log: Pick<vscode.LogOutputChannel, 'info' | 'warn'>;
  run(command: string, ...args: unknown[]): Thenable<unknown>;
  /** What the sidecar's checks found, for the walkthrough's context keys. */
  onDoctor?(report: DoctorResult): void;
  /** The sidecar's `probe` of the Cursor CLI (`spend`: the person agreed to its prompts). */
  probe?(spend: boolean): Promise<ProbeResult>;
  // ------------------------------------------------------------------------------------------
  // the platform-mismatch report of vscode-client/src/platform.ts (the
  // Windows/macOS work) plugs in here: its items are shown as a "Platform" section of the report.
  platformReport?(): SetupItem[] | Promise<SetupItem[]>;
}

/** Gathers every check (sidecar, VS Code, platform). Never throws: a failure is an item. */
export async function collectSections(d: CheckSetupDeps): Promise<SetupSection[]> {
  let sidecar: SetupItem[];
  try {
    const report = await d.doctor();
    d.onDoctor?.(report);
    sidecar = sidecarItems(report);
  } catch (e) {
    d.log.warn(`doctor failed: ${e instanceof Error ? e.message : String(e)}`);
    sidecar = [
      {
        id: 'sidecar',
        title: 'Cursor Bridge helper',
        status: 'fail',
        summary: 'The helper program (`cursor-bridge`) could not run its checks.',
        fix: 'See the log; reinstalling the extension for your platform, or `cursorBridge.sidecarPath`, fixes a missing helper.',
        action: 'showLogs',
      },
    ];
  }
  const sections: SetupSection[] = [
    { title: 'Cursor CLI and the sidecar', items: sidecar },
    { title: 'VS Code', items: vscodeChecks(hostFacts(await githubSignedIn())) },
  ];
  // see CheckSetupDeps.platformReport.
  const platform = d.platformReport ? await Promise.resolve(d.platformReport()).catch(() => []) : [];
  if (platform.length) sections.push({ title: 'Platform', items: platform });
  return sections;
}

let panel: vscode.WebviewPanel | undefined;
/** The last probe's report, shown under the checks until the page is closed. */
let lastProbe: ProbeResult | undefined;

/** Asks before the probe runs (and before it spends requests), then runs it with progress. */
async function runProbe(d: CheckSetupDeps): Promise<ProbeResult | undefined> {
  if (!d.probe) return undefined;
  const label = await vscode.window.showWarningMessage(
    'Cursor Bridge: probe the Cursor CLI?',
    { modal: true, detail: PROBE_CONSENT },
    PROBE_CHOICES.spend,
    PROBE_CHOICES.free,
  );
  const choice = probeChoice(label);
  if (!choice) return undefined;
  const probe = d.probe;
  const result = await vscode.window.withProgress(
    {
      location: vscode.ProgressLocation.Notification,
      title: 'Cursor Bridge: probing the Cursor CLI (up to two minutes)…',
    },
    () => probe(choice === 'spend'),
  );
  d.log.info(`probe: ${result.findings.map((f) => `${f.id}=${f.outcome}`).join(' ')} (spent ${result.spent})`);
  return result;
}

/** Cursor Bridge: Check Setup — the report in a webview beside the editor. */
export async function showCheckSetup(d: CheckSetupDeps): Promise<string> {
  const sections = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: 'Cursor Bridge: checking the set-up…' },
    () => collectSections(d),
  );
  const markdown = renderReport(sections) + (lastProbe ? renderProbe(lastProbe) : '');
  const html = await markdownToHtml(markdown);
  const nonce = Math.random().toString(36).slice(2) + Date.now().toString(36);
  if (!panel) {
    panel = vscode.window.createWebviewPanel(
      'cursorBridge.checkSetup',
      'Cursor Bridge: Check Setup',
      vscode.ViewColumn.Active,
      { enableScripts: true },
    );
    panel.onDidDispose(() => {
      panel = undefined;
      lastProbe = undefined;
    });
  }
  const current = panel;
  current.webview.html = reportHtml(html, nonce, { can: !!d.probe, done: !!lastProbe });
  type Message = { fix?: string; again?: boolean; copy?: boolean; probe?: boolean; copyProbe?: boolean };
  const sub = current.webview.onDidReceiveMessage(async (m: Message) => {
    if (m.probe) {
      try {
        const result = await runProbe(d);
        if (!result) return;
        lastProbe = result;
        sub.dispose();
        await showCheckSetup(d);
      } catch (e) {
        d.log.warn(`probe failed: ${e instanceof Error ? e.message : String(e)}`);
        void vscode.window.showErrorMessage(
          `Cursor Bridge: the probe failed: ${e instanceof Error ? e.message : String(e)}`,
        );
      }
    } else if (m.copyProbe && lastProbe) {
      await vscode.env.clipboard.writeText(JSON.stringify(lastProbe, null, 2));
      void vscode.window.showInformationMessage(
        'Cursor Bridge: the probe report was copied as JSON (nothing private is in it).',
      );
    } else if (m.copy) {
      await vscode.env.clipboard.writeText(markdown);
      void vscode.window.showInformationMessage('Cursor Bridge: the report was copied as Markdown.');
    } else if (m.again) {
      sub.dispose();
      await showCheckSetup(d);
    } else if (m.fix && m.fix in FIX_LABELS) {
      const changed = await applyFix(m.fix as FixId, (c) => d.run(c));
      d.log.info(`check setup: fix ${m.fix} ${changed ? 'applied' : 'not applied'}`);
      if (changed) {
        sub.dispose();
        await showCheckSetup(d);
      }
    }
  });
  current.onDidDispose(() => sub.dispose());
  current.reveal();
  d.log.info(
    `check setup: ${sections
      .flatMap((s) => s.items)
      .map((i) => `${i.id}=${i.status}`)
      .join(' ')}`,
  );
  return markdown;
}

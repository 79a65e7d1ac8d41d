// Check Setup's "Probe the Cursor CLI" button: the sidecar's `probe` (protocol.md), which checks the
// bridge's assumptions against the person's real Cursor CLI build. It sends prompts (requests of
// the person's plan) only after the person agreed in a modal; its report is a section of the
// Check Setup page and can be copied as JSON for a bug report (it holds nothing private).

import type { ProbeFinding, ProbeOutcome, ProbeResult } from './protocol';

const MARK: Record<ProbeOutcome, string> = { asAssumed: '✓', differs: '≠', failed: '✗', notAsked: '–' };
const WORD: Record<ProbeOutcome, string> = {
  asAssumed: 'as assumed',
  differs: 'differs',
  failed: 'failed',
  notAsked: 'not asked',
};

/** What the person chose in the consent modal. */
export type ProbeChoice = 'spend' | 'free';

export const PROBE_CHOICES: Record<ProbeChoice, string> = {
  spend: 'Probe, with up to 4 prompts',
  free: 'Probe without prompts',
};

/** The modal's text: what runs, where, and what it costs. */
export const PROBE_CONSENT =
  'The probe runs a short scripted session against your Cursor CLI in a private scratch folder (ask mode, a tool of ours that only echoes). ' +
  'With prompts it sends up to 4 tiny ones, which count as requests of your Cursor plan; without, it asks only what needs no prompt. ' +
  'What it learns about this CLI build is kept, and the bridge acts on it.';

/** The choice behind a modal button's label (undefined: dismissed). */
export function probeChoice(label: string | undefined): ProbeChoice | undefined {
  return (Object.keys(PROBE_CHOICES) as ProbeChoice[]).find((c) => PROBE_CHOICES[c] === label);
}

/** The probe's report as a Markdown section of the Check Setup page. */
export function renderProbe(r: ProbeResult): string {
  const lines = ['', `## Probe of the ${r.agent}${r.version ? ` (${r.version})` : ''}`, ''];
  for (const f of r.findings) lines.push(...finding(f));
  lines.push(
    '',
    `${r.spent} request${r.spent === 1 ? '' : 's'} of your plan spent. ` +
      (r.kept
        ? 'What was learnt is kept for this CLI build; the bridge acts on it until the CLI updates.'
        : 'Nothing was kept (no state folder).'),
    '',
  );
  return lines.join('\n');
}

function finding(f: ProbeFinding): string[] {
  const out = [`- ${MARK[f.outcome]} **${f.question}** (${WORD[f.outcome]})`, `  - ${f.observed}`];
  if (f.bridge) out.push(`  - Bridge: ${f.bridge}`);
  return out;
}

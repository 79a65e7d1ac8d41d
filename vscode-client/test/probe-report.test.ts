// Check Setup's probe section (probe-report.ts): what the person reads, and the consent choices.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PROBE_CHOICES, PROBE_CONSENT, probeChoice, renderProbe } from '../src/probe-report';
import type { ProbeResult } from '../src/protocol';

const result: ProbeResult = {
  agent: 'Cursor CLI',
  version: '2026.11.20-8f3a1c2',
  spent: 1,
  kept: true,
  findings: [
    {
      id: 'sessionTools',
      question: 'Does a new session list the tools of the MCP server it is given, within 5 s?',
      outcome: 'differs',
      observed: 'The session listed the tools 6120 ms after `session/new` answered.',
      bridge: 'With this build it waits up to 12 s.',
      measured: { listedMs: 6120 },
    },
    {
      id: 'chatStore',
      question: 'Is a print-mode chat kept where the bridge looks for it?',
      outcome: 'notAsked',
      observed: 'Not asked: it sends a prompt.',
      bridge: '',
      measured: null,
    },
  ],
};

describe('renderProbe', () => {
  it('says for each assumption what the build did and what the bridge does, and what was spent', () => {
    const md = renderProbe(result);
    assert.match(md, /## Probe of the Cursor CLI \(2026\.11\.20-8f3a1c2\)/);
    assert.match(
      md,
      /≠ \*\*Does a new session list .*\*\* \(differs\)\n {2}- The session listed .*\n {2}- Bridge: With this build it waits up to 12 s\./,
    );
    assert.match(md, /– \*\*Is a print-mode chat .*\*\* \(not asked\)\n {2}- Not asked: it sends a prompt\.\n\n/);
    assert.doesNotMatch(md, /Bridge: \n/, 'no empty bridge line for a question not asked');
    assert.match(md, /1 request of your plan spent\. What was learnt is kept/);
    assert.match(renderProbe({ ...result, spent: 0, kept: false }), /0 requests of your plan spent\. Nothing was kept/);
  });
});

describe('the probe consent', () => {
  it('maps each button to its choice, and a dismissed modal to none', () => {
    assert.equal(probeChoice(PROBE_CHOICES.spend), 'spend');
    assert.equal(probeChoice(PROBE_CHOICES.free), 'free');
    assert.equal(probeChoice(undefined), undefined);
    assert.equal(probeChoice('Cancel'), undefined);
  });
  it('says what it costs before anything runs', () => {
    assert.match(PROBE_CONSENT, /requests of your Cursor plan/);
    assert.match(PROBE_CONSENT, /scratch folder/);
    assert.match(PROBE_CHOICES.spend, /up to 4 prompts/);
  });
});

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { inferMode, WRITE_TOOLS, type ModeSetting } from '../src/mode';
import type { Mode } from '../src/protocol';
import { fixtureText, toolNames } from './helpers';

const system = (name: string) => fixtureText(`system/${name}.txt`);

describe('inferMode', () => {
  const cases: { name: string; system: string; tools: string[]; expected: Mode }[] = [
    {
      name: 'Agent: no mode line, 40 tools with write tools',
      system: system('agent'),
      tools: toolNames('agent'),
      expected: 'agent',
    },
    {
      name: 'Agent: 41 tools (a tool added mid-session)',
      system: system('agent'),
      tools: toolNames('agent-41'),
      expected: 'agent',
    },
    { name: 'Ask: mode line, 19 read-only tools', system: system('ask'), tools: toolNames('ask'), expected: 'ask' },
    {
      name: 'Plan: mode line, 20 tools with runSubagent',
      system: system('plan'),
      tools: toolNames('plan'),
      expected: 'plan',
    },
    {
      name: 'custom agent, read-only tools',
      system: system('reviewer'),
      tools: toolNames('reviewer'),
      expected: 'ask',
    },
    { name: 'custom agent with write tools', system: system('builder'), tools: toolNames('agent'), expected: 'agent' },
    {
      name: 'custom agent with runSubagent only: still ask',
      system: system('builder'),
      tools: toolNames('plan'),
      expected: 'ask',
    },
    // The system message wins over the tools (the tool list changes under the person's feet).
    { name: 'Ask line beats write tools', system: system('ask'), tools: toolNames('agent'), expected: 'ask' },
    { name: 'Plan line beats write tools', system: system('plan'), tools: toolNames('agent'), expected: 'plan' },
    {
      name: 'an "Agent" mode line',
      system: 'You are currently running in "Agent" mode.',
      tools: [],
      expected: 'agent',
    },
    {
      name: 'mode names are case-insensitive',
      system: 'You are currently running in "PLAN" mode.',
      tools: [],
      expected: 'plan',
    },
    // Without a mode line the tools decide.
    { name: 'no system message, Agent tools', system: '', tools: toolNames('agent'), expected: 'agent' },
    { name: 'no system message, Plan tools', system: '', tools: toolNames('plan'), expected: 'plan' },
    { name: 'no system message, Ask tools', system: '', tools: toolNames('ask'), expected: 'ask' },
    { name: 'no system message, no tools', system: '', tools: [], expected: 'ask' },
    { name: 'one write tool is enough', system: '', tools: ['read_file', 'apply_patch'], expected: 'agent' },
    { name: 'runSubagent alone', system: '', tools: ['runSubagent'], expected: 'plan' },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const d = inferMode({ systemText: c.system, toolNames: c.tools, setting: 'auto', trusted: true });
      assert.equal(d.mode, c.expected, d.reason);
      assert.ok(d.reason.length > 0);
    });
  }

  it('every write tool alone means agent', () => {
    for (const tool of WRITE_TOOLS) {
      assert.equal(
        inferMode({ systemText: '', toolNames: [tool], setting: 'auto', trusted: true }).mode,
        'agent',
        tool,
      );
    }
    assert.equal(WRITE_TOOLS.size, 12);
  });

  it('the setting overrides the inferred mode unless it is auto', () => {
    for (const setting of ['agent', 'ask', 'plan'] as ModeSetting[]) {
      for (const s of ['agent', 'ask', 'plan', 'reviewer']) {
        const d = inferMode({
          systemText: system(s),
          toolNames: toolNames(s === 'reviewer' ? 'reviewer' : s),
          setting,
          trusted: true,
        });
        assert.equal(d.mode, setting, `${setting} over ${s}`);
      }
    }
  });

  it('an untrusted workspace always asks, over the setting and the request', () => {
    for (const setting of ['auto', 'agent', 'plan'] as ModeSetting[]) {
      for (const s of ['agent', 'plan']) {
        const d = inferMode({ systemText: system(s), toolNames: toolNames(s), setting, trusted: false });
        assert.deepEqual(d, { mode: 'ask', reason: 'untrusted workspace' });
      }
    }
  });
});

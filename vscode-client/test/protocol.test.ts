// protocol.ts mirrors sidecar/src/protocol/ (its names here; its fields in the sidecar's
// `protocol/mirror.rs`); these tests fail when they drift apart, or when
// protocol.md stops documenting something protocol.ts knows.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { DELTA_KINDS, ERROR_KINDS, ErrorCode, Notification, PROTOCOL_VERSION, Request } from '../src/protocol';
import { REPO_ROOT } from './helpers';

// The protocol module and the shared terms its messages are made of (`vocab/`), as one text: the
// method groups and terms live in separate files.
const rust = ['protocol', 'vocab']
  .map((dir) => path.join(REPO_ROOT, 'sidecar', 'src', dir))
  .flatMap((dir) =>
    fs
      .readdirSync(dir)
      .filter((f) => f.endsWith('.rs'))
      .sort()
      .map((f) => fs.readFileSync(path.join(dir, f), 'utf8')),
  )
  .join('\n');
const doc = fs.readFileSync(path.join(REPO_ROOT, 'protocol.md'), 'utf8');

/** The string constants of `pub mod <name> { … }` in the protocol module. */
function rustModuleStrings(module: string): string[] {
  const body = new RegExp(`pub mod ${module} \\{([\\s\\S]*?)\\n\\}`).exec(rust)?.[1] ?? '';
  return [...body.matchAll(/pub const [A-Z_]+: &str = "([^"]+)";/g)].map((m) => m[1]);
}

function rustStringArray(name: string): string[] {
  // Whitespace as rustfmt lays it out: the array may start on the next line.
  const body = new RegExp(`${name}: &'static \\[&'static str\\] =\\s*&\\[([\\s\\S]*?)\\];`).exec(rust)?.[1] ?? '';
  return [...body.matchAll(/"([^"]+)"/g)].map((m) => m[1]);
}

const sorted = (xs: readonly string[]) => [...xs].sort();

describe('protocol.ts mirrors the protocol module', () => {
  it('protocol version', () => {
    assert.match(rust, new RegExp(`PROTOCOL_VERSION: u32 = ${PROTOCOL_VERSION};`));
  });
  it('request methods', () => {
    assert.deepEqual(sorted(Object.values(Request)), sorted(rustModuleStrings('request')));
  });
  it('notifications', () => {
    assert.deepEqual(sorted(Object.values(Notification)), sorted(rustModuleStrings('notification')));
  });
  it('delta kinds, in order', () => {
    assert.deepEqual([...DELTA_KINDS], rustStringArray('KINDS'));
  });
  it('error kinds', () => {
    // `ErrorKind::as_str`, the only place that writes a kind's wire name as a string.
    const kinds = [...rust.matchAll(/ErrorKind::\w+ => "([^"]+)"/g)].map((m) => m[1]);
    assert.ok(kinds.length > 0, 'found ErrorKind::as_str');
    assert.deepEqual(sorted(ERROR_KINDS), sorted(kinds));
  });
  it('error codes', () => {
    for (const [name, code] of Object.entries(ErrorCode)) {
      assert.match(rust, new RegExp(`: i32 = ${code};`), name);
    }
  });
});

describe('protocol.md documents everything protocol.ts uses', () => {
  for (const name of [...Object.values(Request), ...Object.values(Notification), ...DELTA_KINDS, ...ERROR_KINDS]) {
    it(name, () => assert.ok(doc.includes(`\`${name}\``), `${name} is not in protocol.md`));
  }
});

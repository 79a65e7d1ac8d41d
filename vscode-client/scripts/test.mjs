// Unit tests: bundle each test/*.test.ts with esbuild (the `vscode` import replaced by
// test/vscode-stub.ts), then run them with Node's built-in test runner. Extra arguments go to
// `node --test` (e.g. --test-name-pattern=marker).
import * as esbuild from 'esbuild';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const outdir = path.join(root, 'out', 'test');
const tests = fs
  .readdirSync(path.join(root, 'test'))
  .filter((f) => f.endsWith('.test.ts'))
  .sort();

fs.rmSync(outdir, { recursive: true, force: true });
await esbuild.build({
  absWorkingDir: root,
  entryPoints: tests.map((f) => `test/${f}`),
  outdir: 'out/test',
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  alias: { vscode: './test/vscode-stub.ts' },
  // Test-only reference tokenizer: loaded from node_modules at run time.
  external: ['gpt-tokenizer'],
  sourcemap: 'inline',
  logLevel: 'warning',
});

const files = tests.map((f) => path.join(outdir, f.replace(/\.ts$/, '.js')));
const result = spawnSync(
  process.execPath,
  ['--enable-source-maps', '--test', '--test-reporter=spec', ...process.argv.slice(2), ...files],
  {
    cwd: root,
    stdio: 'inherit',
  },
);
process.exit(result.status ?? 1);

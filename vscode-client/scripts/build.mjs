// Bundles the extension into one file, out/extension.js (the only code the VSIX ships).
// `vscode` is provided by the extension host; everything else (vscode-jsonrpc) is bundled, which
// is why `vsce package --no-dependencies` is right.
import * as esbuild from 'esbuild';
import { fileURLToPath } from 'node:url';
import * as path from 'node:path';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));

await esbuild.build({
  absWorkingDir: root,
  entryPoints: ['src/extension.ts'],
  outfile: 'out/extension.js',
  bundle: true,
  platform: 'node',
  format: 'cjs',
  // VS Code 1.104's extension host runs Node 22; Node 20 is what we test on.
  target: 'node20',
  external: ['vscode'],
  minify: process.argv.includes('--minify'),
  sourcemap: process.argv.includes('--sourcemap'),
  legalComments: 'none',
  logLevel: 'warning',
});
console.log('bundled out/extension.js');

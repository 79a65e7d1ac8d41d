// The extension's lint (run by `cargo xtask test` and `--quick`, xtask/src/extension.rs). It lives
// beside its pinned tools in lint/, so its imports resolve there; it is run from the extension's
// folder (`eslint --config lint/eslint.config.mjs .`), which is then the base of its patterns. Syntax only: typed rules would need the TypeScript 6 program of a TypeScript 7
// project, and `npm run typecheck` (TypeScript 7) already checks the types.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    // e2e/ is the harness of a real VS Code (browser and Node globals mixed), not the extension.
    ignores: ['out/**', 'server/**', 'lint/**', 'test/fixtures/**', 'e2e/**'],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    rules: {
      // `_`-prefixed names are deliberately unused (a callback's signature, a destructured rest).
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      // A promise left unawaited must say so (`void p`); the rest of the code base does.
      'no-void': 'off',
    },
  },
  {
    files: ['scripts/**/*.mjs'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly' } },
  },
);

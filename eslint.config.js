// Lint rules that catch what review kept finding: promises nobody awaits or catches, variables
// and imports left unused, `any`, and lines past 120 characters. Type-aware (typescript-eslint's
// project service), so a floating promise is found through every call, not by name.
// Formatting is Prettier's (.prettierrc.json); `npm run lint` runs both checks, `npm test` too.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      'node_modules/',
      'build/',
      'data/',
      'artifacts/',
      'tmp/',
      'media/',
      'native/',
      '**/*.mjs',
      'vitest.config.ts',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      // A variable a closure reads before the one assignment that sets it (a late-built part) stays a let.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      // Prettier's layout of a call chain puts [Symbol.asyncIterator] on a line of its own.
      'no-unexpected-multiline': 'off',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: false }],
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' },
      ],
      // The session's event tables name their owner (`const s = this`) on purpose: handlers read as "s does".
      '@typescript-eslint/no-this-alias': 'off',
      'max-len': [
        'error',
        { code: 120, ignoreUrls: true, ignoreStrings: true, ignoreTemplateLiterals: true, ignoreRegExpLiterals: true },
      ],
    },
  },
  {
    // Fakes in tests: a voice that fails before its first chunk is a generator with no yield.
    files: ['test/**/*.ts'],
    rules: { 'require-yield': 'off' },
  },
);

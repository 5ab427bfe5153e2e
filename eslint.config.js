// Lint: the layer boundaries (docs/architecture.md) and typescript-eslint's recommended rules
// (syntax only, no type-aware rules: it stays fast). `npm test` runs it beside tsc.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import boundaries from 'eslint-plugin-boundaries';

// Each element is a layer; the first pattern that matches a file decides its element. A
// library or plugin folder captures its name, so "its own folder" can be said in a rule.
const elements = [
  { type: 'kernel-api', pattern: 'core/public.ts', mode: 'full' },
  { type: 'kernel', pattern: 'core/**', mode: 'full' },
  { type: 'library-api', pattern: 'lib/*/index.ts', mode: 'full', capture: ['name'] },
  { type: 'library', pattern: 'lib/*/**', mode: 'full', capture: ['name'] },
  { type: 'plugin-api', pattern: 'plugins/*/extensions.ts', mode: 'full', capture: ['name'] },
  { type: 'plugin', pattern: 'plugins/*/**', mode: 'full', capture: ['name'] },
  { type: 'app', pattern: 'app/**', mode: 'full' },
  { type: 'config', pattern: 'config/**', mode: 'full' },
  { type: 'outside', pattern: '{test,bench,bin}/**', mode: 'full' },
];
const own = (type) => [type, { name: '{{ from.captured.name }}' }];
const kernel = ['kernel-api', 'kernel'];

export default tseslint.config(
  // What .gitignore leaves out of the repository is not linted either (local scratch files, caches).
  { ignores: ['node_modules/**', '.data/**', '.tap/**', 'coverage/**', '.cache/**', '.scratch/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { ecmaVersion: 2024, sourceType: 'module', globals: { process: 'readonly', console: 'readonly', URL: 'readonly' } },
    plugins: { boundaries },
    settings: {
      'boundaries/elements': elements,
      'boundaries/include': ['core/**', 'lib/**', 'plugins/**', 'app/**', 'config/**', 'test/**', 'bench/**', 'bin/**'],
      // Type-only imports, re-exports and import() are dependencies too.
      'boundaries/dependency-nodes': ['import', 'export', 'dynamic-import'],
    },
    rules: {
      // `any` is how the kernel types heterogeneous registries (EntitySchema<any, any>, operation
      // definitions of any input) and how tests read JSON bodies; tsc strict checks every use.
      '@typescript-eslint/no-explicit-any': 'off',
      // A leading underscore names what a destructuring drops on purpose.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', ignoreRestSiblings: true }],
      'boundaries/element-types': ['error', {
        default: 'disallow',
        message: 'a ${file.type} file must not import ${dependency.source} (${dependency.type}): see docs/architecture.md, "What belongs where"',
        rules: [
          // The kernel imports nothing above it.
          { from: kernel, allow: kernel },
          // A library: the kernel's entry point and its own folder.
          { from: ['library-api', 'library'], allow: ['kernel-api', own('library-api'), own('library')] },
          // A plugin: the kernel's and the libraries' entry points, its own folder, and other
          // plugins' extensions.ts (only those in its dependsOn: test/core/boundaries.test.ts).
          { from: ['plugin-api', 'plugin'], allow: ['kernel-api', 'library-api', 'plugin-api', own('plugin')] },
          // Composition, configuration and tests may import everything.
          { from: ['app', 'config', 'outside'], allow: ['*'] },
        ],
      }],
    },
  },
  {
    // A plugin's or a library's write runs in writeTransaction, which retries a serialization
    // failure or a deadlock inside the service instead of answering it (issue 11).
    files: ['plugins/**/*.ts', 'lib/**/*.ts'],
    rules: {
      'no-restricted-syntax': ['error', {
        selector: "CallExpression[callee.property.name='transactional']",
        message: 'use db.writeTransaction(em, work) from the kernel: it retries serialization failures and deadlocks',
      }],
    },
  },
);

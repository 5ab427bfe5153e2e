// Import circles, type-only imports included (tsPreCompilationDeps): `npm test` runs it
// beside tsc and the boundary lint (test/support/run.ts).

export default {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'An import circle (type-only ones too) ties modules that should layer: break it by moving the shared type down.',
      from: {},
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(node_modules|[.]data|[.]tap|[.]scratch|[.]cache|coverage)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};

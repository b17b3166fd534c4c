// The layering of docs/architecture.md ("The rules"), checked over src/ and jobs/ by
// test/architecture-rules.test.ts (or `npx depcruise src jobs`). Arrows point down:
//   src/cli.ts → src/commands → src/runtime → the wings (and jobs/ beside them)
//   → src/queue, src/platform, src/warehouse, src/http → src/settings → src/lib
// src/config.ts sits just above src/settings (it imports only src/settings and src/lib; anything may read it).
// Type-only imports count like any other, unless a rule says otherwise.

const WINGS = '^src/(sync|provisioning|webhooks|scim|console)/';
const CLI = '^src/cli[.]ts$';
const OURS = '^(src|jobs)/';


export default {
  forbidden: [
    {
      name: 'no-cycle',
      comment: 'No import cycle, of values or of types.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'lib-imports-nothing-of-ours',
      comment: 'src/lib holds domain-free helpers: it imports nothing of ours outside itself.',
      severity: 'error',
      from: { path: '^src/lib/' },
      to: { path: OURS, pathNot: '^src/lib/' },
    },
    {
      name: 'config-imports-only-lib',
      comment: 'src/config.ts (the one reader of the environment) imports only src/settings and src/lib.',
      severity: 'error',
      from: { path: '^src/config[.]ts$' },
      to: { path: OURS, pathNot: '^src/(lib|settings)/' },
    },
    {
      name: 'settings-import-only-lib',
      comment: 'src/settings parses the settings that carry a domain (orgs file, console users, webhook secrets…) for src/config.ts: it imports only src/lib.',
      severity: 'error',
      from: { path: '^src/settings/' },
      to: { path: OURS, pathNot: '^src/(lib|settings)/' },
    },
    {
      name: 'http-imports-no-layer-above',
      comment: 'src/http is the one HTTP server factory (Fastify): the wings hand it their plugins; it imports nothing of ours but src/lib.',
      severity: 'error',
      from: { path: '^src/http/' },
      to: { path: OURS, pathNot: '^src/(lib|http)/' },
    },
    {
      name: 'platform-and-warehouse-import-no-layer-above',
      comment:
        'The API client and storage import no wing, nor the runtime, the queue, the commands or jobs/ ' +
        '(the platform client reads src/config.ts; row types live in src/warehouse).',
      severity: 'error',
      from: { path: '^src/(platform|warehouse)/' },
      to: { path: [WINGS, '^src/(runtime|queue|commands|simulator)/', '^jobs/', CLI] },
    },
    {
      name: 'queue-imports-no-layer-above',
      comment: 'src/queue owns BullMQ and the job context, below the runtime: it imports no wing (so names no sync job), nor the runtime.',
      severity: 'error',
      from: { path: '^src/queue/' },
      to: { path: [WINGS, '^src/(runtime|commands|simulator)/', '^jobs/', CLI] },
    },
    {
      name: 'wings-import-no-command',
      comment: 'The wings and jobs/ sit below the commands and the CLI.',
      severity: 'error',
      from: { path: [WINGS, '^jobs/'] },
      to: { path: ['^src/commands/', CLI] },
    },
    {
      name: 'wings-see-runtime-as-types-only',
      comment:
        'The wings and jobs/ are handed the process logger and metrics (src/runtime/log.ts, metrics.ts) and may name them ' +
        'as types; they import nothing else of src/runtime (the job context is src/queue/job-context.ts).',
      severity: 'error',
      from: { path: [WINGS, '^jobs/'] },
      to: { path: '^src/runtime/', pathNot: '^src/runtime/(log|metrics)[.]ts$' },
    },
    {
      name: 'wings-import-no-runtime-value',
      comment: 'The logger and metrics named by a wing are types only.',
      severity: 'error',
      from: { path: [WINGS, '^jobs/'] },
      to: { path: '^src/runtime/', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'runtime-imports-no-command',
      severity: 'error',
      from: { path: '^src/runtime/' },
      to: { path: ['^src/commands/', CLI] },
    },
    {
      name: 'nothing-imports-the-cli',
      severity: 'error',
      from: { path: OURS },
      to: { path: CLI },
    },
    {
      name: 'only-the-cli-imports-jobs',
      comment: 'src/cli.ts, the composition root, is the one importer of jobs/ (jobs/index.ts is the catalog\'s list).',
      severity: 'error',
      from: { path: '^src/', pathNot: CLI },
      to: { path: '^jobs/' },
    },
    {
      name: 'simulator-stands-alone',
      comment: 'The platform simulator shares no code with the client it stands in front of; only the commands (demo, simulator) start it.',
      severity: 'error',
      from: { path: '^src/simulator/' },
      to: { path: OURS, pathNot: '^src/simulator/' },
    },
    {
      name: 'only-commands-import-the-simulator',
      severity: 'error',
      from: { path: OURS, pathNot: '^src/(simulator|commands)/' },
      to: { path: '^src/simulator/' },
    },
    {
      name: 'planner-is-pure-ours',
      comment:
        'The planner (src/provisioning/plan/) does no I/O: of our code it imports values only from itself and src/lib ' +
        '(the feed\'s and the platform\'s record types, as types).',
      severity: 'error',
      from: { path: '^src/provisioning/plan/' },
      to: { path: OURS, pathNot: '^src/(lib|provisioning/plan)/', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'planner-is-pure-modules',
      comment: 'The planner imports no Node module (files, network, processes) and no package but zod.',
      severity: 'error',
      from: { path: '^src/provisioning/plan/' },
      to: {
        dependencyTypes: ['core', 'npm', 'npm-dev', 'npm-optional', 'npm-peer', 'npm-bundled', 'npm-no-pkg', 'npm-unknown'],
        pathNot: '^node_modules/zod/',
      },
    },
    {
      name: 'no-unresolvable',
      comment: 'An import no rule could see: fix the path.',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    // Type-only imports are arrows too.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default', 'types'] },
  },
};

// The rules of docs/architecture.md ("The rules"), checked over src/, jobs/, test/ and bench/ by
// test/architecture-rules.test.ts (or `npx depcruise src jobs test bench`); that each rule still
// reports what it forbids is test/architecture-rules-bite.test.ts's. Arrows point down:
//   src/cli.ts → src/commands → src/runtime → the wings (and jobs/ beside them)
//   → src/queue → src/platform, src/warehouse, src/http → src/settings → src/lib
// src/config.ts sits just above src/settings (it imports only src/settings and src/lib; anything may read it).
// Between the wings: WING_USES below, always through the other wing's entry file (src/<wing>/index.ts).
// Type-only imports count like any other, unless a rule says otherwise.

const WING_NAMES = ['sync', 'provisioning', 'webhooks', 'scim', 'console'];
const WINGS = `^src/(${WING_NAMES.join('|')})/`;
const CLI = '^src/cli[.]ts$';
const OURS = '^(src|jobs)/';
/** A package's files, wherever node_modules is (a worktree's may be a link to another checkout's). */
const PACKAGE = (name) => `(^|/)node_modules/${name}/`;
const PACKAGES = ['npm', 'npm-dev', 'npm-optional', 'npm-peer', 'npm-bundled', 'npm-no-pkg', 'npm-unknown'];

/**
 * Which wing may use which: the provisioning pipeline and the webhooks read the sync's state;
 * SCIM is a source of the pipeline (its adapter lives in src/scim); the console shows and acts
 * on every wing; nothing uses the console. Anything not listed is forbidden.
 */
export const WING_USES = {
  sync: [],
  provisioning: ['sync'],
  webhooks: ['sync'],
  scim: ['provisioning'],
  console: ['sync', 'provisioning', 'scim', 'webhooks'],
};

/** One rule per wing that may not use every other: the wings it may not use. */
const wingRules = WING_NAMES.filter((wing) => WING_USES[wing].length < WING_NAMES.length - 1).map((wing) => ({
  name: WING_USES[wing].length === 0 ? `${wing}-uses-no-wing` : `${wing}-uses-only-${WING_USES[wing].join('-and-')}`,
  comment: `src/${wing} imports ${WING_USES[wing].length === 0 ? 'no other wing' : `of the other wings only ${WING_USES[wing].join(' and ')}`} (WING_USES).`,
  severity: 'error',
  from: { path: `^src/${wing}/` },
  to: { path: WINGS, pathNot: `^src/(${[wing, ...WING_USES[wing]].join('|')})/` },
}));

export default {
  forbidden: [
    {
      name: 'no-cycle',
      comment: 'No import cycle, of values or of types.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },

    // The rooms below the wings.
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
      name: 'platform-imports-only-config-settings-lib',
      comment: 'The API client imports of ours only src/config.ts, src/settings and src/lib: no storage, no queue, no server, nothing above.',
      severity: 'error',
      from: { path: '^src/platform/' },
      to: { path: OURS, pathNot: ['^src/(platform|settings|lib)/', '^src/config[.]ts$'] },
    },
    {
      name: 'warehouse-imports-only-settings-lib',
      comment: 'Storage imports of ours only src/settings and src/lib: no API client, no queue, no server, nothing above.',
      severity: 'error',
      from: { path: '^src/warehouse/' },
      to: { path: OURS, pathNot: '^src/(warehouse|settings|lib)/' },
    },
    {
      name: 'queue-imports-only-the-rooms-below',
      comment:
        "src/queue owns BullMQ and the job context, below the runtime: of ours it imports src/warehouse (locks, the scoped handle's types), " +
        'the platform (as types), src/config.ts, src/settings and src/lib; no wing (so it names no sync job), no runtime, no server.',
      severity: 'error',
      from: { path: '^src/queue/' },
      to: { path: OURS, pathNot: ['^src/(queue|warehouse|platform|settings|lib)/', '^src/config[.]ts$'] },
    },
    {
      name: 'queue-sees-the-platform-as-types-only',
      comment: 'A job context carries the platform client it is handed; the queue calls no platform itself.',
      severity: 'error',
      from: { path: '^src/queue/' },
      to: { path: '^src/platform/', dependencyTypesNot: ['type-only'] },
    },

    // The wings.
    ...wingRules,
    {
      name: 'wings-meet-through-entry-files',
      comment:
        'A wing uses another only through its entry file (src/<wing>/index.ts: what it offers the others); ' +
        'the commands and jobs/, above the wings, may reach further in.',
      severity: 'error',
      from: { path: WINGS },
      to: { path: WINGS, pathNot: ['^src/$1/', `^src/(${WING_NAMES.join('|')})/index[.]ts$`] },
    },
    {
      name: 'wings-import-not-their-own-entry',
      comment: "A wing's entry file is for the other wings: its own files import each other directly (through the entry, they would make cycles).",
      severity: 'error',
      from: { path: WINGS },
      to: { path: '^src/$1/index[.]ts$' },
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
      name: 'planner-is-pure-ours',
      comment:
        'The planner (src/provisioning/plan/) does no I/O: of our code it imports values only from itself and src/lib ' +
        "(the feed's and the platform's record types, as types).",
      severity: 'error',
      from: { path: '^src/provisioning/plan/' },
      to: { path: OURS, pathNot: '^src/(lib|provisioning/plan)/', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'planner-is-pure-modules',
      comment: 'The planner imports no Node module (files, network, processes) and no package but zod.',
      severity: 'error',
      from: { path: '^src/provisioning/plan/' },
      to: { dependencyTypes: ['core', ...PACKAGES], pathNot: PACKAGE('zod') },
    },

    // The composition, the pool and the drivers.
    {
      name: 'runtime-imports-no-command',
      severity: 'error',
      from: { path: '^src/runtime/' },
      to: { path: ['^src/commands/', CLI] },
    },
    {
      name: 'only-the-cli-imports-jobs',
      comment: "src/cli.ts, the composition root, is the one importer of jobs/ in src/ (jobs/index.ts is the catalog's list).",
      severity: 'error',
      from: { path: '^src/', pathNot: CLI },
      to: { path: '^jobs/' },
    },
    {
      name: 'only-composition-and-migrate-import-the-pool',
      comment:
        "The pool (src/warehouse/pool.ts) connects without an organisation's scope: only the app's composition (src/runtime), " +
        '`migrate` and the warehouse itself (scoped handles, the checks) build one; everyone else is handed scoped handles.',
      severity: 'error',
      from: { path: OURS, pathNot: ['^src/runtime/', '^src/commands/migrate[.]ts$', '^src/warehouse/'] },
      to: { path: '^src/warehouse/pool[.]ts$' },
    },
    {
      name: 'only-the-warehouse-opens-postgres',
      comment: "pg's and pg-copy-streams' values are the warehouse's (and doctor's, which tries the logins as configured); others name pg's types only.",
      severity: 'error',
      from: { path: OURS, pathNot: ['^src/warehouse/', '^src/commands/doctor/'] },
      to: { path: PACKAGE('pg(-copy-streams)?'), dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'only-the-queue-speaks-bullmq',
      comment: "BullMQ's values (queues, workers, flows) and Redis connections are src/queue's (and src/lib/redis-client.ts's); others name their types only.",
      severity: 'error',
      from: { path: OURS, pathNot: ['^src/queue/', '^src/lib/redis-client[.]ts$'] },
      to: { path: [PACKAGE('bullmq'), PACKAGE('ioredis')], dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'only-the-platform-client-speaks-undici',
      comment: "undici is the platform client's transport (src/platform/http.ts), the one HTTP client of src/.",
      severity: 'error',
      from: { path: OURS, pathNot: '^src/platform/' },
      to: { path: PACKAGE('undici') },
    },
    {
      name: 'no-async-local-storage-outside-tracing',
      comment: "node:async_hooks (an AsyncLocalStorage) turns Node 22's promise hooks on for the whole process once used: a cost on every promise of every sync. Only the traces' context may (src/lib/tracing/, loaded when OTEL_* turns traces on); a run's request tally is passed down (src/platform/request-tally.ts).",
      severity: 'error',
      from: { path: OURS, pathNot: '^src/lib/tracing/' },
      to: { dependencyTypes: ['core'], path: '^(node:)?async_hooks$' },
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
      name: 'sources-use-no-dev-dependency',
      comment: 'src/ and jobs/ run from the package without its dev dependencies (the Docker image): no import of one, not even of its types.',
      severity: 'error',
      from: { path: OURS },
      to: { dependencyTypes: ['npm-dev'] },
    },

    // test/ and bench/.
    {
      name: 'sources-import-no-test-or-bench',
      comment: 'src/ and jobs/ are the package: they import nothing of test/ or bench/.',
      severity: 'error',
      from: { path: OURS },
      to: { path: '^(test|bench)/' },
    },
    {
      name: 'nothing-imports-the-cli',
      comment: 'src/cli.ts runs the program as it loads: tests and benchmarks spawn it (bin/trainsync.js, dist/), never import it.',
      severity: 'error',
      from: {},
      to: { path: CLI },
    },
    {
      name: 'nothing-imports-a-test-file',
      comment: 'A test file imported runs its suites again inside the importer: what two files share goes to test/helpers/.',
      severity: 'error',
      from: {},
      to: { path: '[.]test[.]ts$' },
    },
    {
      name: 'tests-import-sources-not-the-build',
      comment: 'Tests and benchmarks import src/, never dist/ (a stale build would be tested); they spawn dist/cli.js.',
      severity: 'error',
      from: { path: '^(test|bench)/' },
      to: { path: '^dist/' },
    },
    {
      name: 'bench-uses-only-test-helpers',
      comment: 'A benchmark may share test/helpers/ (databases, services, the CLI), nothing else of test/.',
      severity: 'error',
      from: { path: '^bench/' },
      to: { path: '^test/', pathNot: '^test/helpers/' },
    },
    {
      name: 'bench-runs-without-vitest',
      comment: 'Benchmarks run under `npm run bench` (node, through tsx), not vitest: they import none of it.',
      severity: 'error',
      from: { path: '^bench/' },
      to: { path: PACKAGE('vitest') },
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

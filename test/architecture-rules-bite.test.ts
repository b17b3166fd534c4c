import { copyFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cruiseWithRules, CRUISED, ROOT, ruleNames } from './helpers/depcruise.ts';

/**
 * The rules of .dependency-cruiser.mjs still bite: a scratch tree laid out as the repository
 * (src/, jobs/, test/, bench/, the package.json and tsconfig.json, a link to node_modules)
 * holds one forbidden import per rule, each in a file of its own, and the allowed imports
 * nearest to them. Cruised with the repository's rules, each forbidden import must be
 * reported by its rule and nothing else may be: a rule that stops reporting what it forbids,
 * or starts reporting what it allows, fails here. Every rule must have its forbidden import
 * below, so a new rule comes with the proof that it bites.
 */

/** One import line: `type` imports a type only; a package is named bare, a file by its path from the root. */
interface Import {
  target: string;
  type?: boolean;
}

/** A forbidden import: the rule that must report it, the file that makes it. */
interface Bite extends Import {
  rule: string;
  from: string;
}

const BITES: Bite[] = [
  // The rooms below the wings.
  { rule: 'lib-imports-nothing-of-ours', from: 'src/lib/bite-settings.ts', target: 'src/settings/orgs-file.ts' },
  { rule: 'config-imports-only-lib', from: 'src/config.ts', target: 'src/warehouse/scope.ts' },
  { rule: 'settings-import-only-lib', from: 'src/settings/bite-platform.ts', target: 'src/platform/client.ts', type: true },
  { rule: 'http-imports-no-layer-above', from: 'src/http/bite-scim.ts', target: 'src/scim/index.ts' },
  { rule: 'platform-imports-only-config-settings-lib', from: 'src/platform/bite-warehouse.ts', target: 'src/warehouse/scope.ts' },
  { rule: 'warehouse-imports-only-settings-lib', from: 'src/warehouse/bite-platform.ts', target: 'src/platform/types.ts', type: true },
  { rule: 'queue-imports-only-the-rooms-below', from: 'src/queue/bite-sync.ts', target: 'src/sync/index.ts' },
  { rule: 'queue-sees-the-platform-as-types-only', from: 'src/queue/bite-platform.ts', target: 'src/platform/client.ts' },
  // The wings: which uses which, through the entry files.
  { rule: 'sync-uses-no-wing', from: 'src/sync/bite-scim.ts', target: 'src/scim/index.ts' },
  { rule: 'provisioning-uses-only-sync', from: 'src/provisioning/bite-scim.ts', target: 'src/scim/index.ts' },
  { rule: 'webhooks-uses-only-sync', from: 'src/webhooks/bite-provisioning.ts', target: 'src/provisioning/index.ts', type: true },
  { rule: 'scim-uses-only-provisioning', from: 'src/scim/bite-console.ts', target: 'src/console/index.ts' },
  { rule: 'wings-meet-through-entry-files', from: 'src/console/bite-deep.ts', target: 'src/provisioning/held-plans.ts' },
  { rule: 'wings-import-not-their-own-entry', from: 'src/scim/bite-own-entry.ts', target: 'src/scim/index.ts' },
  { rule: 'wings-import-no-command', from: 'jobs/bite-command.ts', target: 'src/commands/held.ts' },
  { rule: 'wings-see-runtime-as-types-only', from: 'src/webhooks/bite-app.ts', target: 'src/runtime/app.ts', type: true },
  { rule: 'wings-import-no-runtime-value', from: 'src/sync/bite-log.ts', target: 'src/runtime/log.ts' },
  { rule: 'planner-is-pure-ours', from: 'src/provisioning/plan/bite-store.ts', target: 'src/provisioning/held-plans.ts' },
  { rule: 'planner-is-pure-modules', from: 'src/provisioning/plan/bite-fs.ts', target: 'node:fs' },
  // The composition, the pool and the drivers.
  { rule: 'runtime-imports-no-command', from: 'src/runtime/bite-command.ts', target: 'src/commands/held.ts' },
  { rule: 'only-the-cli-imports-jobs', from: 'src/commands/bite-jobs.ts', target: 'jobs/index.ts' },
  { rule: 'only-composition-and-migrate-import-the-pool', from: 'src/console/bite-pool.ts', target: 'src/warehouse/pool.ts' },
  { rule: 'only-the-warehouse-opens-postgres', from: 'src/sync/bite-pg.ts', target: 'pg' },
  { rule: 'only-the-queue-speaks-bullmq', from: 'src/webhooks/bite-bullmq.ts', target: 'bullmq' },
  { rule: 'only-the-platform-client-speaks-undici', from: 'src/scim/bite-undici.ts', target: 'undici' },
  { rule: 'no-async-local-storage-outside-tracing', from: 'src/platform/bite-async-hooks.ts', target: 'node:async_hooks' },
  { rule: 'simulator-stands-alone', from: 'src/simulator/bite-lib.ts', target: 'src/lib/errors.ts' },
  { rule: 'only-commands-import-the-simulator', from: 'src/runtime/bite-simulator.ts', target: 'src/simulator/index.ts' },
  { rule: 'sources-use-no-dev-dependency', from: 'src/lib/bite-dev.ts', target: 'fast-check' },
  // test/ and bench/.
  { rule: 'sources-import-no-test-or-bench', from: 'src/lib/bite-test.ts', target: 'test/helpers/db.ts' },
  { rule: 'nothing-imports-the-cli', from: 'test/bite-cli.test.ts', target: 'src/cli.ts' },
  { rule: 'nothing-imports-a-test-file', from: 'test/helpers/bite-test-file.ts', target: 'test/bite-cli.test.ts' },
  { rule: 'tests-import-sources-not-the-build', from: 'test/bite-dist.test.ts', target: 'dist/cli.js' },
  { rule: 'bench-uses-only-test-helpers', from: 'bench/bite-test.ts', target: 'test/fixtures/feed.ts' },
  { rule: 'bench-runs-without-vitest', from: 'bench/bite-vitest.ts', target: 'vitest' },
  // Anywhere.
  { rule: 'no-unresolvable', from: 'src/lib/bite-missing.ts', target: 'src/lib/missing.ts' },
];

/** Two files that import each other: the cycle rule reports the cycle once, from the first of them. */
const CYCLE = ['src/lib/bite-cycle-a.ts', 'src/lib/bite-cycle-b.ts'] as const;

/** Allowed imports, each the nearest neighbour of a forbidden one: none may be reported. */
const ALLOWED: Record<string, Import[]> = {
  'src/console/allowed.ts': ['sync', 'provisioning', 'scim', 'webhooks'].map((wing) => ({ target: `src/${wing}/index.ts` })),
  'src/scim/allowed.ts': [{ target: 'src/provisioning/index.ts' }, { target: 'src/scim/store.ts' }, { target: 'src/runtime/log.ts', type: true }],
  'src/provisioning/allowed.ts': [{ target: 'src/sync/index.ts' }, { target: 'pg', type: true }],
  'src/webhooks/allowed.ts': [{ target: 'src/sync/index.ts' }, { target: 'bullmq', type: true }, { target: 'src/runtime/metrics.ts', type: true }],
  'src/provisioning/plan/allowed.ts': [{ target: 'zod' }, { target: 'src/lib/errors.ts' }, { target: 'src/platform/types.ts', type: true }],
  'src/queue/allowed.ts': [{ target: 'src/warehouse/scope.ts' }, { target: 'src/platform/client.ts', type: true }, { target: 'bullmq' }, { target: 'ioredis' }],
  'src/platform/allowed.ts': [{ target: 'src/config.ts' }, { target: 'src/settings/orgs-file.ts' }, { target: 'undici' }, { target: 'node:perf_hooks' }],
  'src/lib/tracing/allowed.ts': [{ target: 'node:async_hooks' }],
  'src/warehouse/allowed.ts': [{ target: 'src/warehouse/pool.ts' }, { target: 'pg' }, { target: 'src/settings/orgs-file.ts' }],
  'src/runtime/allowed.ts': [{ target: 'src/warehouse/pool.ts' }, { target: 'src/queue/job-queue.ts' }, { target: 'src/http/server-factory.ts' }],
  'src/commands/migrate.ts': [{ target: 'src/warehouse/pool.ts' }, { target: 'src/simulator/index.ts' }],
  'src/commands/allowed.ts': [{ target: 'src/provisioning/held-plans.ts' }, { target: 'src/scim/store.ts' }, { target: 'src/runtime/app.ts' }],
  'src/commands/doctor/allowed.ts': [{ target: 'pg' }],
  'src/cli.ts': [{ target: 'jobs/index.ts' }, { target: 'src/commands/held.ts' }],
  'jobs/allowed.ts': [{ target: 'src/provisioning/held-plans.ts' }, { target: 'src/sync/runs-store.ts' }],
  'test/allowed.test.ts': [{ target: 'src/warehouse/pool.ts' }, { target: 'src/scim/store.ts' }, { target: 'vitest' }, { target: 'fast-check' }, { target: 'test/helpers/db.ts' }, { target: 'bench/budget.ts' }],
  'bench/allowed.ts': [{ target: 'test/helpers/db.ts' }, { target: 'pg' }, { target: 'src/runtime/app.ts' }],
};

const importLine = (from: string, imported: Import, index: number): string => {
  const local = imported.target.includes('/') && !imported.target.startsWith('node:') && !imported.target.startsWith('@');
  let specifier = imported.target;
  if (local) {
    specifier = path.relative(path.dirname(from), imported.target);
    if (!specifier.startsWith('.')) specifier = `./${specifier}`;
  }
  return imported.type ? `import type * as t${index} from '${specifier}';` : `import * as v${index} from '${specifier}';`;
};

let scratch: string;
let reported: string[];

beforeAll(async () => {
  scratch = mkdtempSync(path.join(tmpdir(), 'trainsync-rules-'));
  const files = new Map<string, Import[]>();
  for (const bite of BITES) files.set(bite.from, [bite]);
  files.set(CYCLE[0], [{ target: CYCLE[1] }]);
  files.set(CYCLE[1], [{ target: CYCLE[0] }]);
  for (const [from, imports] of Object.entries(ALLOWED)) files.set(from, imports);
  // Every local file imported is there (but the one that must stay missing), as an empty module.
  const missing = BITES.find((b) => b.rule === 'no-unresolvable')!.target;
  for (const imports of [...files.values()]) {
    for (const { target } of imports) if (target.includes('/') && /^(src|jobs|test|bench|dist)\//.test(target) && !files.has(target) && target !== missing) files.set(target, []);
  }
  for (const [file, imports] of files) {
    mkdirSync(path.join(scratch, path.dirname(file)), { recursive: true });
    writeFileSync(path.join(scratch, file), `${imports.map((imported, index) => importLine(file, imported, index)).join('\n')}\nexport {};\n`);
  }
  copyFileSync(path.join(ROOT, 'package.json'), path.join(scratch, 'package.json'));
  copyFileSync(path.join(ROOT, 'tsconfig.json'), path.join(scratch, 'tsconfig.json'));
  symlinkSync(path.join(ROOT, 'node_modules'), path.join(scratch, 'node_modules'), 'dir');
  const result = await cruiseWithRules(scratch, CRUISED);
  reported = result.summary.violations.map((v) => `${v.rule.name}: ${v.from} → ${v.to}`);
});

afterAll(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

describe('the architecture rules bite (a scratch tree with one forbidden import per rule)', () => {
  it('report each forbidden import, by its rule, and nothing the rules allow', () => {
    const expected = BITES.map((b) => `${b.rule}: ${b.from} → ${b.rule === 'no-unresolvable' ? path.relative(path.dirname(b.from), b.target).replace(/^(?!\.)/, './') : resolvedName(b.target)}`);
    expected.push(`no-cycle: ${CYCLE[0]} → ${CYCLE[1]}`);
    expect(reported.map((line) => line.replace(/(→ ).*node_modules\/(@?[^/]+)\/.*$/, '$1$2')).sort()).toEqual(expected.sort());
  });

  it('cover every rule of .dependency-cruiser.mjs: a new rule comes with its forbidden import here', async () => {
    const covered = new Set([...BITES.map((b) => b.rule), 'no-cycle']);
    expect((await ruleNames()).filter((name) => !covered.has(name))).toEqual([]);
  });
});

/** How depcruise names an import's target: a file by its path, a package by its name (after the rewrite above), a Node module bare. */
function resolvedName(target: string): string {
  if (target.startsWith('node:')) return target.slice('node:'.length);
  return target;
}

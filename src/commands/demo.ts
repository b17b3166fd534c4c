import { scopedApp } from './options/scoped.ts';
import { randomBytes } from 'node:crypto';
import { DEFAULT_ORG } from '../settings/orgs-file.ts';
import { fileURLToPath } from 'node:url';
import Table from 'cli-table3';
import type { Command } from 'commander';
import { sql } from 'kysely';
import { createApp } from '../runtime/app.ts';
import { errorMessage } from '../lib/errors.ts';
import { maskUrl } from '../lib/infra-errors.ts';
import { deletePrefixKeys } from '../queue/delete-prefix.ts';
import { tryAdvisoryLock, withAdvisoryLock } from '../warehouse/advisory-lock.ts';
import { loadConfig } from '../config.ts';
import type { Logger } from '../runtime/log.ts';
import { provisionFeed } from '../provisioning/provision-feed.ts';
import { readFeed } from '../provisioning/feed/read.ts';
import { loadGroupNames } from '../provisioning/group-names.ts';
import { formatOutcome, formatPlanReport } from './render/provision-report.ts';
import { syncResources } from '../sync/catalog-resources.ts';
import { runSync } from '../sync/run-and-wait.ts';
import { syncPayloadSchema } from '../sync/sync-payload.ts';
import { reconciliationReport } from '../provisioning/reconciliation.ts';
import { startSimulator, writeCallCount } from '../simulator/index.ts';
import type { CommandDeps } from './options/deps.ts';
import { renderAssignmentStatus } from './render/demo-assignments.ts';
import { provisionDeps } from './options/provision-deps.ts';
import { renderReconciliation } from './reconcile.ts';
import { renderSummary } from './sync.ts';
import { tableWidth } from './render/fit-table.ts';
import { fitText } from './render/terminal.ts';

/** The demo's only organisation: its configuration comes from variables alone (no orgs file). */
const DEMO_ORG = DEFAULT_ORG;

/** The demo's database as trainsync's own login (`migrate`, as the owner below, creates it). */
export const DEMO_DATABASE_URL = 'postgres://trainsync_worker@127.0.0.1:5432/trainsync_demo';
/** The demo's database as the owner: the local server's superuser (trust). */
export const DEMO_OWNER_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/trainsync_demo';
export const DEMO_QUEUE_PREFIX = 'trainsync-demo';

/**
 * Each run's own BullMQ prefix (trainsync-demo-<8 hex>): two demos at once never take each
 * other's jobs (a process works the queue it waits on, with its own simulator), and no
 * worker of a deployment takes a demo's. Its keys are deleted when the run ends.
 */
/** Held for a run's steps: one demo at a time per database. */
const DEMO_LOCK = 'trainsync:demo';

export function demoQueuePrefix(): string {
  return `${DEMO_QUEUE_PREFIX}-${randomBytes(4).toString('hex')}`;
}
/** The sample feed shipped in the repo; it matches the simulator's seed-1 organisation. */
export const DEMO_FEED = fileURLToPath(new URL('../../examples/hr-feed.csv', import.meta.url));

const TABLES = [
  'training.courses',
  'training.course_categories',
  'training.results',
  'training.result_filter_answers',
  'training.reporting_filters',
  'training.reporting_filter_answers',
  'training.users',
  'training.seat_usage',
  'training.groups',
  'training.group_courses',
  'training.group_members',
  'training.employees',
  'trainsync.identities',
  'trainsync.provisioning_actions',
] as const;

/** Lines of at most 76 characters: wrapped, a `--` comment's second line would be read as SQL. */
const QUERIES = [
  '-- completion and pass counts per course\nselect course_name, learners, completed, passed, completion_rate\n  from training.course_completion order by learners desc limit 10;',
  "-- pass rate by month\nselect date_trunc('month', date_completed) as month, count(*) as completions,\n       round(avg(case when passed then 1 else 0 end), 3) as pass_share\n  from training.result_details where is_complete group by 1 order by 1;",
  '-- completions by reporting-filter answer (e.g. Department)\nselect filter_name, answer, count(distinct result_id) as results\n  from training.result_filter_details group by 1, 2 order by 1, 3 desc;',
  "-- who has not completed the training assigned to them,\n-- by an HR attribute (e.g. department)\nselect attributes->>'department' as department, course_name,\n       count(*) as open\n  from training.assignment_status\n where status not in ('passed', 'completed')\n group by 1, 2 order by 3 desc;",
  '-- HR against the platform (also: npx trainsync reconcile)\nselect kind, count(*) from training.hr_reconciliation group by kind;',
];

export interface DemoCommandDeps extends Pick<CommandDeps, 'createLogger' | 'jobs'> {
  /** The environment (src/cli.ts hands over the process's). The demo overrides the platform, the queue prefix and (when unset) the database. */
  env: Readonly<Record<string, string | undefined>>;
  write?: (text: string) => void;
  /** Default: a prefix of the run's own (demoQueuePrefix), deleted at the end; tests may give theirs (left to them). */
  queuePrefix?: string;
}

/**
 * `trainsync demo`: the whole product on one machine in under a minute, against an
 * in-process simulator. The state it keeps (database trainsync_demo, for BI queries
 * afterwards) makes a second run repair the drift of its fresh simulator. Its queues live
 * under a Redis prefix of the run's own, deleted at the end.
 */
export function registerDemoCommand(program: Command, deps: DemoCommandDeps): void {
  program
    .command('demo')
    .description('Start a platform simulator, migrate, run a full sync, provision the sample HR feed, and print a report.')
    .option('--feed <file>', 'the HR feed to provision', DEMO_FEED)
    .addHelpText(
      'after',
      `
Needs only Postgres and Redis (e.g. \`docker compose up -d postgres redis\`). Uses DATABASE_URL
(trainsync's own login) and TRAINSYNC_OWNER_DATABASE_URL (the owner) when set, else
${DEMO_DATABASE_URL} and ${DEMO_OWNER_DATABASE_URL}
(created if missing, and kept for queries afterwards),
and an ephemeral TRAINSYNC_SECRET_KEY when none is set. Its jobs live under a Redis prefix
of the run's own (${DEMO_QUEUE_PREFIX}-<8 hex digits>, deleted when it ends; not
TRAINSYNC_QUEUE_PREFIX, so no worker of a deployment takes them), so two demos at once
never take each other's jobs; two at once against the same database run one after the
other (the second says it waits). The simulator (seed 1: 40 courses, 300 users, 3000
results) lives only while the demo runs.

The sample feed (examples/hr-feed.csv) lists the organisation's employees with a few
joiners, leavers, a returner, movers, a renamed employee and one bad row. The first run
adopts the existing accounts and applies the changes. The simulator starts from its seed on
every run, so a second run finds the platform drifted from what trainsync applied (leavers
with access, joiners without an account): the plan reads the platform, repairs that drift,
and the reconcile step then reports 0 discrepancies.
Start from scratch: drop the database the demo used (its last line names it: \`dropdb NAME\`;
trainsync_demo unless DATABASE_URL names another).`,
    )
    .action(async (options: { feed: string }) => {
      const out = deps.write ?? ((text: string): void => void process.stdout.write(text));
      // Every sentence wraps at the terminal's width (or COLUMNS) and every table is drawn to it:
      // the demo is a new user's first sight of trainsync, on whatever terminal they have.
      const write = (text: string): void => out(fitText(text));
      const say = (text: string): void => write(`${text}\n`);
      const env = deps.env;
      const started = performance.now();
      const queuePrefix = deps.queuePrefix ?? demoQueuePrefix();
      const sim = await startSimulator({ seed: 1 });
      const config = loadConfig({
        ...env,
        // The demo is one organisation, `default`, on its own simulator: an orgs file in the
        // environment (a real deployment's) is not the demo's.
        TRAINSYNC_ORGS_FILE: undefined,
        TRAINSYNC_API_URL: sim.url,
        TRAINSYNC_API_KEY: sim.apiKey,
        DATABASE_URL: env.DATABASE_URL || DEMO_DATABASE_URL,
        // A DATABASE_URL of the caller's without an owner's URL: one login for both, as loadConfig reads it.
        TRAINSYNC_OWNER_DATABASE_URL: env.TRAINSYNC_OWNER_DATABASE_URL || (env.DATABASE_URL ? undefined : DEMO_OWNER_DATABASE_URL),
        TRAINSYNC_QUEUE_PREFIX: queuePrefix,
        TRAINSYNC_SECRET_KEY: env.TRAINSYNC_SECRET_KEY || randomBytes(32).toString('hex'),
        // A local simulator: a budget that keeps the demo quick (set it to see the limiter at work).
        TRAINSYNC_REQUESTS_PER_SECOND: env.TRAINSYNC_REQUESTS_PER_SECOND || '50',
        LOG_LEVEL: env.LOG_LEVEL || 'warn',
      });
      const log: Logger = deps.createLogger(config);
      const seconds = (): string => ((performance.now() - started) / 1000).toFixed(1);
      let exitCode = 0;
      try {
        const s = sim.state;
        write(
          `trainsync demo\n  platform simulator: ${sim.url} (seed 1: ${s.courses.length} courses, ${s.users.length} users, ${s.results.length + s.undatedResults.length} results)\n` +
            `  database: ${new URL(config.DATABASE_URL).pathname.slice(1)}   redis prefix: ${config.TRAINSYNC_QUEUE_PREFIX}   request budget: ${config.TRAINSYNC_REQUESTS_PER_SECOND}/s\n\n`,
        );
        const app = await createApp(config, log, { jobs: deps.jobs, migrate: true });
        const database = decodeURIComponent(new URL(config.DATABASE_URL).pathname.slice(1));
        const steps = async (): Promise<void> => {
          write(`1. migrate: done (${seconds()} s)\n\n2. sync everything\n`);
          const outcomes = await runSync(scopedApp(app, DEMO_ORG), syncResources(app.catalog.values()), syncPayloadSchema.parse({ trigger: 'cli' }));
          write(renderSummary(outcomes));
          if (outcomes.some((o) => o.status === 'failed')) exitCode = 1;

          write(`\n3. provision ${options.feed} (${seconds()} s)\n`);
          const writesBefore = writeCallCount(sim.requests);
          const feed = await readFeed(options.feed);
          const groupNames = await loadGroupNames(app.scopes.scope(DEFAULT_ORG));
          const result = await provisionFeed(provisionDeps(app, DEFAULT_ORG), {
            file: options.feed,
            feed,
            mode: 'full',
            dryRun: false,
            force: false,
            onPlan: (planned) => write(`${formatPlanReport(planned, options.feed.split('/').pop() ?? options.feed, { groupNames, width: tableWidth() })}\n`),
          });
          // The demo provisions a full feed: the pipeline's shrink guard stands before it as before `provision`'s.
          if (result.shrink?.decision.refused) {
            write(`REFUSED (${result.shrink.decision.reason}): ${result.shrink.decision.message}\n`);
            exitCode = 2;
            return;
          }
          const writes = writeCallCount(sim.requests) - writesBefore;
          // A refused plan was said once, above (its REFUSED line, or the feed error): here only that nothing was applied.
          if (result.plan.refused) {
            say('the plan was refused (above): nothing was applied');
            exitCode = 1;
          } else if (result.applied && result.applied.audit.length > 0) write(`${formatOutcome(result.applied.audit)}\n`);
          else say('Nothing to apply: every change of this feed was applied by an earlier run.');
          if (result.plan.repairs > 0) {
            write(
              `${result.plan.repairs} of these actions repair drift: the simulator starts from its seed on every demo run, so what an earlier run ` +
                'applied is gone from the platform (leavers have access again, joiners have no account); the plan reads the platform and puts it right\n',
            );
          }
          write(`write calls to the platform: ${writes}\n`);
          if (result.feed.errors.length > 0) write(`(${result.feed.errors.length} row rejected on purpose, to show the per-row report above)\n`);

          const again = await provisionFeed(provisionDeps(app, DEFAULT_ORG), { file: options.feed, mode: 'full', dryRun: true, force: false });
          write(`replanning the same feed now: ${again.plan.actions.length} actions (an unchanged feed makes no write call)\n`);

          write(`\n4. sync users and seats again, to see the changes in the warehouse (${seconds()} s)\n`);
          const after = await runSync(scopedApp(app, DEMO_ORG), ['users', 'seats'], syncPayloadSchema.parse({ trigger: 'cli' }));
          write(renderSummary(after));

          const counts = new Table({ head: ['table', 'rows'], style: { head: [], border: [], compact: true } });
          for (const table of TABLES) {
            // `table` comes from the fixed list above, never from input.
            const { rows } = await sql<{ n: number }>`select count(*)::int as n from ${sql.table(table)}`.execute(app.scopes.scope(DEFAULT_ORG).db);
            counts.push([table, rows[0]?.n ?? 0]);
          }
          write(`\n5. the warehouse\n${counts.toString()}\n\nTry (psql ${maskUrl(config.TRAINSYNC_OWNER_DATABASE_URL)}, the owner: trainsync's own login sees an organisation's rows only inside its scope):\n${QUERIES.join('\n\n')}\n`);

          const assignments = await renderAssignmentStatus(app.scopes.scope(DEFAULT_ORG));
          write(
            `\n6. assigned training (training.assignment_status: employees x the courses of their groups)\n` +
              (assignments ||
                'no assignments yet: they need groups (sync groups), memberships trainsync applied, and the feed in training.employees\n'),
          );
          write(`\n7. HR against the platform (npx trainsync reconcile)\n${renderReconciliation(await reconciliationReport(app.scopes.scope(DEFAULT_ORG), 0))}`);
          write(`\nAll done in ${seconds()} s. Run \`npm run demo\` again: its simulator starts afresh, so the same feed repairs that drift and the reconcile ends at 0.\n`);
          write(`Start from scratch: dropdb ${/^[A-Za-z0-9_]+$/.test(database) ? database : JSON.stringify(database)}\n`);
        };
        try {
          // Two demos on one database would undo each other's provisioning (each has its own
          // simulator, so its own platform ids): the second waits for the first.
          const alone = await tryAdvisoryLock(app.locks, DEMO_LOCK, steps);
          if (!alone.acquired) {
            write(`another demo is running against the database ${database}: waiting for it to finish (or set DATABASE_URL to another database)\n`);
            await withAdvisoryLock(app.locks, DEMO_LOCK, steps);
          }
        } finally {
          await app.close();
          // The run's own prefix only (a test's is the test's): its queues, finished jobs and request budget.
          if (deps.queuePrefix === undefined) {
            await deletePrefixKeys(config.REDIS_URL, config.TRAINSYNC_QUEUE_PREFIX).catch((error: unknown) =>
              write(`(could not delete this run's Redis keys, prefix ${config.TRAINSYNC_QUEUE_PREFIX}: ${errorMessage(error)})\n`),
            );
          }
        }
      } finally {
        await sim.close();
      }
      process.exitCode = exitCode;
    });
}

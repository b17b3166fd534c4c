/**
 * `npm run bench -- drift`: results arriving while a sync pages must cost no re-reads.
 * A first load and then a full walk of 100,000 results, quiet, and again (a new
 * database, the same platform) with 3 new results every 3 pages. For each run: its
 * exit status, pages read, pages ÷ the quiet run's, requests, and rows of the platform
 * missing from the warehouse (the platform read back quietly after the run).
 *
 *   node bin/run-ts.js bench/results-drift.ts '{"results":100000}'
 *
 * Prints one JSON line with the figures.
 */
import { DEFAULT_ORG } from '../src/lib/orgs-file.ts';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { z } from 'zod';
import { allJobs } from '../jobs/index.ts';
import { createApp } from '../src/runtime/app.ts';
import { syncExitCode } from '../src/commands/sync.ts';
import { loadConfig } from '../src/config.ts';
import { createLogger } from '../src/runtime/log.ts';
import { runSync } from '../src/sync/run-and-wait.ts';
import { syncPayloadSchema } from '../src/sync/sync-payload.ts';
import { createBenchDatabase } from './admin-query.ts';
import { startSimulatorChild } from './simulator-child.ts';

const args = z
  .object({ results: z.number().int().positive().default(100_000), driftEvery: z.number().int().positive().default(3), driftCount: z.number().int().positive().default(3) })
  .parse(JSON.parse(process.argv[2] ?? '{}'));

const summarySchema = z.looseObject({ status: z.string(), mode: z.string(), pages: z.number(), requests: z.number().optional(), removed: z.number() });
const envelopeSchema = z.object({ entities: z.array(z.object({ id: z.string() })), links: z.array(z.object({ type: z.string() })) });

const sim = await startSimulatorChild({ seed: 42, sizes: { results: args.results, users: 2_000, resultsFrom: '2024-01-01', resultsTo: '2024-12-31' } });

async function setFaults(faults: Record<string, number>): Promise<void> {
  const response = await fetch(`${sim.url}/__simulator/faults`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(faults) });
  if (!response.ok) throw new Error(`setting faults answered ${response.status}`);
}

/** Every result id the platform lists now (read quietly, page by page). */
async function platformIds(): Promise<Set<string>> {
  const ids = new Set<string>();
  for (let page = 1; ; page++) {
    const response = await fetch(`${sim.url}/api/v2/results?page=${page}`, { headers: { authorization: `Bearer ${sim.apiKey}` } });
    const envelope = envelopeSchema.parse(await response.json());
    for (const entity of envelope.entities) ids.add(entity.id.toLowerCase());
    if (!envelope.links.some((l) => l.type === 'Next Page')) return ids;
  }
}

interface RunFigures {
  exit: number;
  status: string;
  mode: string;
  pages: number;
  requests: number | undefined;
  missing: number;
}

/** A first load and a full walk into a database of their own. */
async function scenario(faults: Record<string, number>): Promise<{ firstLoad: RunFigures; fullWalk: RunFigures }> {
  const database = await createBenchDatabase();
  const config = loadConfig({
    TRAINSYNC_API_URL: sim.url,
    TRAINSYNC_API_KEY: sim.apiKey,
    DATABASE_URL: database.url,
    TRAINSYNC_QUEUE_PREFIX: `bench-${randomBytes(4).toString('hex')}`,
    TRAINSYNC_REQUESTS_PER_SECOND: '10000',
    TRAINSYNC_METRICS_PORT: '0',
    LOG_LEVEL: 'warn',
  });
  const app = await createApp(config, createLogger(config.LOG_LEVEL), { jobs: allJobs, migrate: true });
  const pool = new pg.Pool({ connectionString: database.url, max: 1 });
  try {
    const one = async (full: boolean): Promise<RunFigures> => {
      await setFaults(faults);
      const outcomes = await runSync({ ...app, org: DEFAULT_ORG }, ['results'], syncPayloadSchema.parse({ trigger: 'cli', full }));
      await setFaults({ driftEvery: 0 });
      const summary = summarySchema.parse(outcomes[0]?.result);
      const stored = new Set((await pool.query<{ id: string }>('select result_id::text as id from training.results where removed_at is null')).rows.map((r) => r.id));
      let missing = 0;
      for (const id of await platformIds()) if (!stored.has(id)) missing++;
      return { exit: syncExitCode(outcomes), status: summary.status, mode: summary.mode, pages: summary.pages, requests: summary.requests, missing };
    };
    return { firstLoad: await one(false), fullWalk: await one(true) };
  } finally {
    await pool.end();
    await app.close();
    await database.drop();
  }
}

try {
  const quiet = await scenario({ driftEvery: 0 });
  const arrivals = await scenario({ driftEvery: args.driftEvery, driftCount: args.driftCount });
  const ratio = (run: 'firstLoad' | 'fullWalk'): number => Number((arrivals[run].pages / quiet[run].pages).toFixed(3));
  const figures = {
    results: args.results,
    arrivals: `${args.driftCount} new results every ${args.driftEvery} pages`,
    quiet,
    arrivalsRuns: arrivals,
    pagesRatio: { firstLoad: ratio('firstLoad'), fullWalk: ratio('fullWalk') },
  };
  for (const run of ['firstLoad', 'fullWalk'] as const) {
    process.stdout.write(
      `${run.padEnd(9)}  quiet: exit ${quiet[run].exit}, ${quiet[run].pages} pages, ${quiet[run].requests} requests, ${quiet[run].missing} missing   ` +
        `arrivals: exit ${arrivals[run].exit}, ${arrivals[run].pages} pages (${ratio(run)}× quiet), ${arrivals[run].requests} requests, ${arrivals[run].missing} missing\n`,
    );
  }
  process.stdout.write(`${JSON.stringify(figures)}\n`);
} finally {
  sim.stop();
}

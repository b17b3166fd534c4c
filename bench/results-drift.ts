/**
 * `npm run bench -- drift`: a results run while the platform changes under it. 100,000
 * results (`{"results":N}` to shrink), quiet and then with each fault:
 *
 *   arrivals at the head   new results listed first (dated before the earliest)
 *   arrivals in the middle completions recorded late (dated 1–4 days before the newest)
 *   removals               results deleted anywhere in the listing, ahead or behind
 *   removals and arrivals  both (arrivals drawn at the head, middle or tail)
 *   pairs                  a result the reader passed is deleted and another is completed
 *                          now, between the same two pages (the simulator's pairEvery): in a
 *                          list of oldest first the total stays put while a result shifts
 *                          back across the page boundary
 *
 * The faults come as one arrival before every 25th page served and one removal after
 * every 250th (`arriveEvery`, `removeEvery` to change them): 80 and 8
 * over a walk of the 2,000 pages of 100,000 results (a smaller walk keeps the arrival
 * rate and meets at least 4 removals). The removal period is a multiple of the arrival
 * period, so an arrival never comes between the page after which a result was removed
 * and the next page: a total that stays put then never hides a removal (that case is
 * the risk the read rule accepts). The pairs come at the removal period, both in one
 * interval: the case itself.
 *
 * First loads and full walks read by closed windows (TRAINSYNC_RESULTS_WALK_WINDOW_PAGES,
 * `walkWindowPages` to set it; a value above the list's pages reads it whole, as before
 * windows, to compare).
 *
 * Each scenario starts from a fresh simulator of the same seed, in a database of its
 * own: a first load (`sync results` into an empty warehouse: pages asked for ahead),
 * then a full walk over the loaded warehouse (`--full`). For each run: its exit status,
 * pages read ÷ the quiet run's, and results missing: listed before the run (read quietly),
 * not removed while it ran (GET /__simulator/results/changes), and not current in
 * training.results. The quiet runs are the same for every scenario (same seed, fresh
 * simulator), so they run once.
 *
 *   node bin/run-ts.js bench/results-drift.ts '{"results":10000}'
 *   node bin/run-ts.js bench/results-drift.ts '{"results":10000,"only":["mixed"]}'
 *
 * Prints a table, then one JSON line with the figures and the verdicts.
 */
import { scopedApp } from '../src/commands/options/scoped.ts';
import { randomBytes } from 'node:crypto';
import Table from 'cli-table3';
import pg from 'pg';
import { z } from 'zod';
import { allJobs } from '../jobs/index.ts';
import { syncExitCode } from '../src/commands/sync.ts';
import { loadConfig } from '../src/config.ts';
import { DEFAULT_ORG } from '../src/settings/orgs-file.ts';
import { createApp } from '../src/runtime/app.ts';
import { createLogger } from '../src/runtime/log.ts';
import type { SimulatorFaults } from '../src/simulator/index.ts';
import { runSync } from '../src/sync/run-and-wait.ts';
import { syncPayloadSchema } from '../src/sync/sync-payload.ts';
import { fetchResultChanges, listedResultIds, missingResults, warehouseResultIds } from '../test/helpers/missing-results.ts';
import { createBenchDatabase } from './admin-query.ts';
import { deleteBenchKeys } from './redis-cleanup.ts';
import { startSimulatorChild } from './simulator-child.ts';

const SCENARIO_KEYS = ['arrivalsHead', 'arrivalsMiddle', 'removals', 'mixed', 'pairs'] as const;
type ScenarioKey = (typeof SCENARIO_KEYS)[number];

const args = z
  .object({
    results: z.number().int().positive().default(100_000),
    /** One arrival before every Nth page served: 80 over a walk of 2,000 pages. */
    arriveEvery: z.number().int().positive().default(25),
    /** One removal after every Nth page served: 8 over a walk of 2,000 pages (at least 4 a walk when shrunk; a multiple of arriveEvery). */
    removeEvery: z.number().int().positive().default(250),
    /** Only these scenarios, besides the quiet one. */
    only: z.array(z.enum(SCENARIO_KEYS)).optional(),
    /** TRAINSYNC_RESULTS_WALK_WINDOW_PAGES (default: the setting's default). */
    walkWindowPages: z.number().int().positive().optional(),
  })
  .parse(JSON.parse(process.argv[2] ?? '{}'));

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const PAGE_SIZE = 50;
const walkPages = Math.max(1, Math.ceil(args.results / PAGE_SIZE));
const arriveEvery = args.arriveEvery;
// A walk shrunk below 1,000 pages still meets 4 removals; a multiple of arriveEvery (see the header).
const removeEvery = arriveEvery * Math.max(1, Math.floor(Math.min(args.removeEvery, walkPages / 4) / arriveEvery));

const QUIET: Partial<SimulatorFaults> = { driftEvery: 0, driftCount: 1, arrivalsAt: 'tail', removeEvery: 0, removeLimit: 0, removeAt: 'served', pairEvery: 0 };

interface Scenario {
  key: ScenarioKey;
  label: string;
  faults: Partial<SimulatorFaults>;
  removes: boolean;
}

const ALL_SCENARIOS: Scenario[] = [
  { key: 'arrivalsHead', label: 'arrivals at the head', faults: { driftEvery: arriveEvery, arrivalsAt: 'head' }, removes: false },
  { key: 'arrivalsMiddle', label: 'arrivals in the middle', faults: { driftEvery: arriveEvery, arrivalsAt: 'middle' }, removes: false },
  { key: 'removals', label: 'removals (anywhere)', faults: { removeEvery, removeAt: 'anywhere' }, removes: true },
  { key: 'mixed', label: 'removals and arrivals', faults: { removeEvery, removeAt: 'anywhere', driftEvery: arriveEvery, arrivalsAt: 'random' }, removes: true },
  { key: 'pairs', label: 'a removal and a completion in one interval', faults: { pairEvery: removeEvery }, removes: true },
];
const SCENARIOS = ALL_SCENARIOS.filter((s) => args.only === undefined || args.only.includes(s.key));

const summarySchema = z.looseObject({ status: z.string(), mode: z.string(), pages: z.number(), requests: z.number().optional(), note: z.string().optional() });

type RunKind = 'firstLoad' | 'fullWalk';
const RUN_LABEL: Record<RunKind, string> = { firstLoad: 'first load', fullWalk: 'full walk (--full)' };

interface RunFigures {
  exit: number;
  status: string;
  pages: number;
  requests: number | undefined;
  seconds: number;
  added: number;
  removed: number;
  missing: number;
  /** Up to 5 of the missing ids, to look up. */
  missingIds: string[];
  /** What `trainsync.unfinished_windows` holds after the run (the windows the next run reads again). */
  unfinished: string[];
  /** Every unfinished window is named in the run's note (the first five when there are more). */
  namesWindows: boolean;
  note?: string;
}

/** A first load, then a full walk, into a database of their own, on a fresh simulator, with `faults` on during each run. */
async function scenario(faults: Partial<SimulatorFaults>): Promise<Record<RunKind, RunFigures>> {
  const sim = await startSimulatorChild({ seed: 42, sizes: { results: args.results, users: 2_000, resultsFrom: '2024-01-01', resultsTo: '2024-12-31' } });
  const database = await createBenchDatabase();
  const prefix = `bench-drift-${randomBytes(4).toString('hex')}`;
  const config = loadConfig({
    TRAINSYNC_API_URL: sim.url,
    TRAINSYNC_API_KEY: sim.apiKey,
    DATABASE_URL: database.url,
    REDIS_URL,
    TRAINSYNC_QUEUE_PREFIX: prefix,
    TRAINSYNC_REQUESTS_PER_SECOND: '10000',
    ...(args.walkWindowPages === undefined ? {} : { TRAINSYNC_RESULTS_WALK_WINDOW_PAGES: String(args.walkWindowPages) }),
    TRAINSYNC_METRICS_PORT: '0',
    // The runs' warnings (a gap left, say) would bury the table; their notes are printed after it.
    LOG_LEVEL: 'error',
  });
  const app = await createApp(config, createLogger(config.LOG_LEVEL), { jobs: allJobs, migrate: true });
  const pool = new pg.Pool({ connectionString: database.url, max: 1 });
  const setFaults = async (patch: Partial<SimulatorFaults>): Promise<void> => {
    const response = await fetch(`${sim.url}/__simulator/faults`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(patch) });
    if (!response.ok) throw new Error(`setting faults answered ${response.status}: ${await response.text()}`);
  };
  try {
    const one = async (full: boolean): Promise<RunFigures> => {
      // Read with the faults off: this read would move them on otherwise.
      const before = await listedResultIds(sim.url, sim.apiKey);
      await setFaults({ ...QUIET, ...faults });
      const started = performance.now();
      const outcomes = await runSync(scopedApp(app, DEFAULT_ORG), ['results'], syncPayloadSchema.parse({ trigger: 'cli', full }));
      const seconds = (performance.now() - started) / 1000;
      // Before the faults are set again, which starts a new record.
      const changes = await fetchResultChanges(sim.url);
      await setFaults(QUIET);
      const summary = summarySchema.parse(outcomes[0]?.result);
      const missing = missingResults(before, changes.removed, await warehouseResultIds(pool));
      const unfinished = (await pool.query<{ window_key: string }>("select window_key from trainsync.unfinished_windows where resource = 'results' order by window_key")).rows.map((r) => r.window_key);
      const note = summary.note;
      return {
        exit: syncExitCode(outcomes),
        status: summary.status,
        pages: summary.pages,
        requests: summary.requests,
        seconds: Number(seconds.toFixed(1)),
        added: changes.added.length,
        removed: changes.removed.length,
        missing: missing.length,
        missingIds: missing.slice(0, 5),
        unfinished,
        namesWindows: unfinished.length > 0 && note !== undefined && unfinished.slice(0, 5).every((key) => note.includes(key)),
        ...(note === undefined ? {} : { note }),
      };
    };
    return { firstLoad: await one(false), fullWalk: await one(true) };
  } finally {
    await pool.end();
    await app.close();
    await database.drop();
    await deleteBenchKeys(REDIS_URL, prefix);
    sim.stop();
  }
}

/** Pages a faulted run may read, against the quiet run's. */
const MOST_PAGES_RATIO = 1.05;

/** The verdict of a faulted run against its target (see the header). */
function verdict(run: RunFigures, ratio: number, removes: boolean): { pass: boolean; target: string; why: string } {
  const pages = ratio <= MOST_PAGES_RATIO;
  if (!removes) {
    const pass = run.exit === 0 && pages && run.missing === 0;
    return { pass, target: `exit 0, ≤ ${MOST_PAGES_RATIO}× pages, 0 missing`, why: `exit ${run.exit}, ${ratio}× pages, ${run.missing} missing` };
  }
  const cleanSuccess = run.exit === 0 && run.missing === 0;
  const namedIncomplete = run.exit === 3 && run.namesWindows;
  const outcome = run.exit === 0 && run.missing > 0 ? `exit 0 with ${run.missing} missing` : `exit ${run.exit}, ${run.missing} missing${run.exit === 3 ? `, ${run.namesWindows ? 'names' : 'does not name'} ${run.unfinished.join(', ') || 'no window'}` : ''}`;
  return { pass: (cleanSuccess || namedIncomplete) && pages, target: `exit 0 and 0 missing, or exit 3 naming the windows; ≤ ${MOST_PAGES_RATIO}× pages`, why: `${outcome}, ${ratio}× pages` };
}

const quiet = await scenario({});
const figures: Record<string, unknown> = {
  results: args.results,
  walkPages,
  rates: { arrivalEveryPages: arriveEvery, removalEveryPages: removeEvery },
  quiet,
};
const verdicts: Array<{ scenario: string; run: RunKind; pass: boolean; target: string; why: string }> = [];
const table = new Table({ head: ['scenario', 'run', 'exit', 'pages', '× quiet', 'added', 'removed', 'missing', 's', 'target'], style: { head: [], border: [], compact: true } });
for (const run of ['firstLoad', 'fullWalk'] as const) {
  const q = quiet[run];
  table.push(['quiet', RUN_LABEL[run], q.exit, q.pages, '1', q.added, q.removed, q.missing, q.seconds, q.exit === 0 && q.missing === 0 ? 'baseline' : 'MISS: the quiet run itself']);
}
for (const s of SCENARIOS) {
  const runs = await scenario(s.faults);
  const ratios: Record<RunKind, number> = { firstLoad: 0, fullWalk: 0 };
  for (const run of ['firstLoad', 'fullWalk'] as const) {
    const r = runs[run];
    ratios[run] = Number((r.pages / quiet[run].pages).toFixed(3));
    const v = verdict(r, ratios[run], s.removes);
    verdicts.push({ scenario: s.key, run, ...v });
    table.push([s.label, RUN_LABEL[run], r.exit, r.pages, ratios[run], r.added, r.removed, r.missing, r.seconds, `${v.pass ? 'PASS' : 'MISS'} (${v.target})`]);
  }
  figures[s.key] = { faults: s.faults, ...runs, pagesRatio: ratios };
}
process.stdout.write(`${table.toString()}\n`);
for (const v of verdicts) process.stdout.write(`${v.pass ? 'PASS' : 'MISS'}  ${v.scenario} ${RUN_LABEL[v.run]}: ${v.why} (target: ${v.target})\n`);
for (const s of SCENARIOS) {
  for (const run of ['firstLoad', 'fullWalk'] as const) {
    const note = (figures[s.key] as Record<RunKind, RunFigures>)[run].note;
    if (note !== undefined) process.stdout.write(`note  ${s.key} ${RUN_LABEL[run]}: ${note.length > 300 ? `${note.slice(0, 300)}…` : note}\n`);
  }
}
process.stdout.write(`${JSON.stringify({ ...figures, verdicts })}\n`);

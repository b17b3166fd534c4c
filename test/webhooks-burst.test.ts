import { randomBytes } from 'node:crypto';
import { freePort } from './helpers/own-services.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addResult, getResult } from '../src/simulator/index.ts';
import { grantsByBudget, grantsIn, maxGrantsInAnySecond } from './helpers/budget-grants.ts';
import { createSyncHarness, type SyncHarness } from './helpers/sync-harness.ts';
import { startWorkerProcess, waitFor, type WorkerProcess } from './helpers/worker-process.ts';

/**
 * A burst of completions against a small request budget, through `trainsync worker`
 * in a child process: no sliding second holds more of the budget's grants than the
 * budget (Redis's clock, read from the worker's debug lines: helpers/budget-grants.ts),
 * every request to the platform had one, and events naming one result are served by one
 * fetch. (Serial: it runs in `test:timing`.)
 */

const BUDGET = 5;
const DISTINCT = 40;
const RETAKES = 10;
const secret = randomBytes(32).toString('base64');
let h: SyncHarness;
let worker: WorkerProcess | undefined;

beforeAll(async () => {
  h = await createSyncHarness({
    simulator: { sizes: { results: 100, users: 60, courses: 10 }, webhooks: { secret, concurrency: 32 } },
    env: { TRAINSYNC_REQUESTS_PER_SECOND: String(BUDGET) },
  });
});
afterAll(async () => {
  worker?.child.kill('SIGKILL');
  h?.sim.webhooks.close();
  await h?.close();
});

describe('a burst of webhook events', () => {
  it('stays inside the request budget and fetches a result named by many events once', async () => {
    const port = await freePort();
    // From before the worker starts: every request it makes is counted against its grants.
    h.sim.resetRequests();
    worker = startWorkerProcess(
      // Debug: the budget's grant lines, which the test counts.
      { ...h.env, TRAINSYNC_WEBHOOK_SECRET: secret, TRAINSYNC_WEBHOOK_PORT: String(port), TRAINSYNC_WEBHOOK_HOST: '127.0.0.1', TRAINSYNC_METRICS_PORT: '0', LOG_LEVEL: 'debug', LOG_FORMAT: 'json' },
      ['--no-schedules'],
    );
    await waitFor(async () => (worker!.output().includes('webhook receiver listening') ? true : undefined), 30_000, 'the receiver');
    h.sim.webhooks.configure({ url: `http://127.0.0.1:${port}/webhooks/platform` });

    const retaken = addResult(h.sim.state, {});
    const completions = h.sim.webhooks.completeCourse({ count: DISTINCT });
    const retakes = Array.from({ length: RETAKES }, (_, i) => h.sim.webhooks.completeCourse({ resultId: retaken.id, score: i })[0]!);
    const eventIds = [...completions, ...retakes].flatMap((c) => c.eventIds);
    await h.sim.webhooks.idle();
    expect(h.sim.webhooks.summary()).toMatchObject({ delivered: DISTINCT + RETAKES, gaveUp: 0 });

    await waitFor(
      async () => {
        const { rows } = await h.database.pool.query("select count(*)::int as n from trainsync.webhook_events where event_id = any($1) and outcome = 'loaded'", [eventIds]);
        return rows[0].n === eventIds.length ? true : undefined;
      },
      90_000,
      'every event loaded',
    );

    const api = h.sim.requests.filter((r) => r.path.startsWith('/api/v2/'));
    // One budget (one key), one grant per request (paced at 5/s: nothing reserved ahead), and never more than the budget in a second of Redis's clock.
    const grants = grantsByBudget(grantsIn(worker.output()));
    expect(grants.size).toBe(1);
    const burst = [...grants.values()][0]!;
    expect(burst).toHaveLength(api.length);
    expect(maxGrantsInAnySecond(burst)).toBeLessThanOrEqual(BUDGET);
    const fetchesOfRetaken = api.filter((r) => r.path.toLowerCase() === `/api/v2/results/${retaken.id}`).length;
    // Ten events, one result: one fetch (two if an event arrived while the first was under way).
    expect(fetchesOfRetaken).toBeGreaterThanOrEqual(1);
    expect(fetchesOfRetaken).toBeLessThanOrEqual(2);
    expect(api.length).toBeLessThanOrEqual(DISTINCT + 2);
    // Paced by the budget, not by the burst: the grants above (the drain time is in `npm run bench -- webhooks`).

    // The row holds the last retake: coalescing never keeps an older read.
    const row = await h.database.pool.query('select score from training.results where result_id = $1', [retaken.id]);
    expect(row.rows).toEqual([{ score: getResult(h.sim.state, retaken.id)!.score }]);
    expect(getResult(h.sim.state, retaken.id)!.score).toBe(RETAKES - 1);
    for (const c of completions) {
      const stored = await h.database.pool.query('select score from training.results where result_id = $1', [c.resultId]);
      expect(stored.rows).toEqual([{ score: getResult(h.sim.state, c.resultId)!.score }]);
    }
  });
});

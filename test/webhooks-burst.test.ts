import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { freePort } from './helpers/own-services.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addResult, getResult, maxInWindow } from '../src/simulator/index.ts';
import { createSyncHarness, type SyncHarness } from './helpers/sync-harness.ts';
import { startWorkerProcess, waitFor, type WorkerProcess } from './helpers/worker-process.ts';

/**
 * A burst of completions against a small request budget, through `trainsync worker`
 * in a child process: the platform never sees more requests in any sliding second
 * than the budget, and events naming one result are served by one fetch. It measures
 * arrival times at the simulator, so it runs in the serial `test:timing` run.
 */

const BUDGET = 5;
const DISTINCT = 40;
const RETAKES = 10;
/** Deliveries to a sink before the measured burst (see the test). */
const WARM_UP = 32;
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
    worker = startWorkerProcess(
      { ...h.env, TRAINSYNC_WEBHOOK_SECRET: secret, TRAINSYNC_WEBHOOK_PORT: String(port), TRAINSYNC_WEBHOOK_HOST: '127.0.0.1', TRAINSYNC_METRICS_PORT: '0' },
      ['--no-schedules'],
    );
    await waitFor(async () => (worker!.output().includes('webhook receiver listening') ? true : undefined), 30_000, 'the receiver');
    // The simulator runs in this process and stamps a request when its handler runs. Its
    // first burst of deliveries (a cold HTTP client) stalled this process 35–47 ms, and a fetch
    // that arrived meanwhile was stamped that late: 160 ms after the one before it where the
    // budget spaces sends 205 ms, six in a second by stamp. A burst to a sink first warms it,
    // so the stamps below are the arrivals (first gap 205–206 ms in eight runs after this).
    const sink = http.createServer((req, res) => req.resume().on('end', () => res.end()));
    await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
    h.sim.webhooks.configure({ url: `http://127.0.0.1:${(sink.address() as AddressInfo).port}/` });
    h.sim.webhooks.completeCourse({ count: WARM_UP });
    await h.sim.webhooks.idle();
    await new Promise((resolve) => sink.close(resolve));
    h.sim.webhooks.configure({ url: `http://127.0.0.1:${port}/webhooks/platform` });
    h.sim.resetRequests();

    const retaken = addResult(h.sim.state, {});
    const completions = h.sim.webhooks.completeCourse({ count: DISTINCT });
    const retakes = Array.from({ length: RETAKES }, (_, i) => h.sim.webhooks.completeCourse({ resultId: retaken.id, score: i })[0]!);
    const eventIds = [...completions, ...retakes].flatMap((c) => c.eventIds);
    await h.sim.webhooks.idle();
    expect(h.sim.webhooks.summary()).toMatchObject({ delivered: WARM_UP + DISTINCT + RETAKES, gaveUp: 0 });

    await waitFor(
      async () => {
        const { rows } = await h.database.pool.query("select count(*)::int as n from trainsync.webhook_events where event_id = any($1) and outcome = 'loaded'", [eventIds]);
        return rows[0].n === eventIds.length ? true : undefined;
      },
      90_000,
      'every event loaded',
    );

    const api = h.sim.requests.filter((r) => r.path.startsWith('/api/v2/'));
    expect(maxInWindow(api, 1000)).toBeLessThanOrEqual(BUDGET);
    const fetchesOfRetaken = api.filter((r) => r.path.toLowerCase() === `/api/v2/results/${retaken.id}`).length;
    // Ten events, one result: one fetch (two if an event arrived while the first was under way).
    expect(fetchesOfRetaken).toBeGreaterThanOrEqual(1);
    expect(fetchesOfRetaken).toBeLessThanOrEqual(2);
    expect(api.length).toBeLessThanOrEqual(DISTINCT + 2);
    // Paced by the budget, not by the burst: the sliding-second check above (the drain time is in `npm run bench -- webhooks`).

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

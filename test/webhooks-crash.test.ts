import { randomBytes } from 'node:crypto';
import { freePort } from './helpers/own-services.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WEBHOOK_QUEUE } from '../src/queue/names.ts';
import { createSyncHarness, type SyncHarness } from './helpers/sync-harness.ts';
import { startWorkerProcess, waitFor, type WorkerProcess } from './helpers/worker-process.ts';

/**
 * `trainsync worker` as a user runs it, in child processes: an event acknowledged just
 * before the worker is killed with SIGKILL is still processed after a restart, and
 * events sent while no receiver listens arrive through the simulator's retries.
 */

const secret = randomBytes(32).toString('base64');
let h: SyncHarness;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  h = await createSyncHarness({ simulator: { sizes: { results: 100, users: 30, courses: 8 }, webhooks: { secret } } });
});
afterAll(async () => {
  for (const w of workers) w.child.kill('SIGKILL');
  h?.sim.webhooks.close();
  await h?.close();
});

function startWorker(port: number, args: string[]): WorkerProcess {
  const env = {
    ...h.env,
    TRAINSYNC_WEBHOOK_SECRET: secret,
    TRAINSYNC_WEBHOOK_PORT: String(port),
    TRAINSYNC_WEBHOOK_HOST: '127.0.0.1',
    TRAINSYNC_METRICS_PORT: '0',
  };
  const worker = startWorkerProcess(env, ['--no-schedules', ...args]);
  workers.push(worker);
  return worker;
}

const listening = (worker: WorkerProcess): Promise<true> =>
  waitFor(async () => (worker.output().includes('webhook receiver listening') ? true : undefined), 30_000, 'the webhook receiver to listen');

async function event(eventId: string): Promise<{ processed_at: Date | null; outcome: string | null } | undefined> {
  const { rows } = await h.database.pool.query('select processed_at, outcome from trainsync.webhook_events where event_id = $1', [eventId]);
  return rows[0] as { processed_at: Date | null; outcome: string | null } | undefined;
}

const loaded = (eventId: string): Promise<true> =>
  waitFor(async () => ((await event(eventId))?.outcome === 'loaded' ? true : undefined), 60_000, `event ${eventId} loaded`);

describe('webhooks and the worker process', () => {
  it('processes an event acknowledged right before a SIGKILL, after the restart, from the table alone', async () => {
    const port = await freePort();
    // This worker receives but does not work the webhooks queue: the event cannot be processed before the kill.
    const first = startWorker(port, ['--queues', 'sync,provision']);
    await listening(first);
    h.sim.webhooks.configure({ url: `http://127.0.0.1:${port}/webhooks/platform` });
    const [completion] = h.sim.webhooks.completeCourse({ score: 42 });
    const eventId = completion!.eventIds[0]!;
    await h.sim.webhooks.idle();
    first.child.kill('SIGKILL');
    expect(await first.exited).toBe('SIGKILL');
    expect(h.sim.webhooks.deliveries.find((d) => d.eventId === eventId)).toMatchObject({ state: 'delivered', statuses: [200] });
    expect(await event(eventId)).toEqual({ processed_at: null, outcome: null });
    // As if the process died between the commit and queueing the job: only the table knows.
    await h.app.queue.queues[WEBHOOK_QUEUE].obliterate({ force: true });

    const second = startWorker(port, []);
    await loaded(eventId);
    const row = await h.database.pool.query('select score from training.results where result_id = $1', [completion!.resultId]);
    expect(row.rows).toEqual([{ score: 42 }]);
    expect(second.output()).toMatch(/webhook sweep: stored events queued again/);
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  });

  it('delivers events sent while the receiver is down once it is up, through the simulator retrying with backoff', async () => {
    const port = await freePort();
    h.sim.webhooks.configure({ url: `http://127.0.0.1:${port}/webhooks/platform`, retryBaseMs: 200, retryMaxMs: 1_000, maxAttempts: 60 });
    const [completion] = h.sim.webhooks.completeCourse({ childCourses: 2 });
    const records = () => h.sim.webhooks.deliveries.filter((d) => completion!.eventIds.includes(d.eventId));
    await waitFor(async () => (records().every((r) => r.statuses.length >= 2) ? true : undefined), 30_000, 'two refused attempts per event');

    const worker = startWorker(port, []);
    await h.sim.webhooks.idle();
    for (const record of records()) {
      expect(record.state).toBe('delivered');
      expect(record.statuses[0]).toBe(0);
      expect(record.statuses.at(-1)).toBe(200);
    }
    for (const eventId of completion!.eventIds) await loaded(eventId);
    const rows = await h.database.pool.query('select count(*)::int as n from training.results where result_id = any($1::uuid[])', [[completion!.resultId, ...completion!.childResultIds]]);
    expect(rows.rows[0].n).toBe(3);
    worker.child.kill('SIGTERM');
    expect(await worker.exited).toBe(0);
  });
});

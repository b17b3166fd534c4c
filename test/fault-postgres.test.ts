import { writeFileSync } from 'node:fs';
import { Queue, QueueEvents, type Job } from 'bullmq';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { defaultJobOptions } from '../src/queue/job-options.ts';
import { SYNC_QUEUE } from '../src/queue/names.ts';
import { addResult, allResults, removeResult, startSimulator, updateResult, type RunningSimulator } from '../src/simulator/index.ts';
import { createPool } from '../src/warehouse/pool.ts';
import { startOwnPostgres, type OwnPostgres } from './helpers/own-services.ts';
import { dropPrefix, REDIS_URL, testPrefix } from './helpers/redis.ts';
import { simulatorResults, warehouseResults } from './helpers/warehouse-compare.ts';
import { logRecords, startWorkerProcess, waitFor, type WorkerProcess } from './helpers/worker-process.ts';

/**
 * `trainsync worker` against a Postgres of its own that is restarted, then crashed and
 * brought back, in the middle of a results sync: the worker stays up (same process),
 * the job waits without spending a BullMQ attempt and resumes from its checkpoint into
 * the same run, the warehouse converges, and each outage is logged exactly twice.
 */
describe('the worker through Postgres outages', () => {
  const DATABASE = 'trainsync_fault';
  let own: OwnPostgres;
  let sim: RunningSimulator;
  let prefix: string;
  let pool: pg.Pool;
  let queue: Queue;
  let events: QueueEvents;
  let worker: WorkerProcess;
  let env: Record<string, string>;

  beforeAll(async () => {
    [own, sim] = await Promise.all([
      startOwnPostgres(),
      // 240 pages of 50 at 40 requests/s: about six seconds per full walk, plenty of time for an outage.
      startSimulator({ seed: 11, sizes: { results: 12_000, resultsFrom: '2024-01-01', resultsTo: '2024-12-31' }, faults: { latencyMs: 20 } }),
    ]);
    prefix = testPrefix();
    env = {
      TRAINSYNC_API_URL: sim.url,
      TRAINSYNC_API_KEY: sim.apiKey,
      // Created (and migrated) by the worker on its first start.
      DATABASE_URL: own.url(DATABASE),
      REDIS_URL,
      TRAINSYNC_QUEUE_PREFIX: prefix,
      TRAINSYNC_REQUESTS_PER_SECOND: '40',
      TRAINSYNC_BATCH_ROWS: '500',
      TRAINSYNC_RETRY_MAX_DELAY_MS: '200',
      TRAINSYNC_METRICS_PORT: '0',
      LOG_LEVEL: 'info',
      LOG_FORMAT: 'json',
    };
    const config = loadConfig(env);
    queue = new Queue(SYNC_QUEUE, { connection: { url: REDIS_URL }, prefix });
    events = new QueueEvents(SYNC_QUEUE, { connection: { url: REDIS_URL }, prefix });
    await events.waitUntilReady();
    worker = startWorkerProcess(env, ['--no-schedules', '--queues', 'sync']);
    await Promise.race([
      worker.ready,
      worker.exited.then((code) => {
        throw new Error(`the worker exited (${code}) before it started:\n${worker.output()}`);
      }),
    ]);
    // The test's own reads go through the same pool factory, so they survive the outages too.
    pool = createPool(config.DATABASE_URL, { max: 2, applicationName: 'trainsync-fault-test' });
  });

  afterAll(async () => {
    // FAULT_TEST_LOG=/tmp/worker.log keeps the worker's log lines for a look after a failure.
    if (process.env.FAULT_TEST_LOG) writeFileSync(process.env.FAULT_TEST_LOG, worker?.output() ?? '');
    if (worker && worker.child.exitCode === null && worker.child.signalCode === null) worker.child.kill('SIGKILL');
    await events?.close();
    await queue?.close();
    await pool?.end().catch(() => undefined);
    await sim?.close();
    await own?.destroy();
    if (prefix) await dropPrefix(prefix);
  });

  /** The run of `job`, once it has read at least `pages` pages (undefined until then, also while Postgres is down). */
  const runOf = async (job: Job, pages = 0): Promise<{ id: number; status: string; pages: number } | undefined> => {
    try {
      const { rows } = await pool.query<{ id: number; status: string; pages: number }>(
        'select id, status, pages from trainsync.runs where job_id = $1 order by id',
        [String(job.id)],
      );
      return rows.length > 0 && rows[0]!.pages >= pages ? rows[0] : undefined;
    } catch {
      return undefined;
    }
  };

  const outageLines = (): { unreachable: number; back: number } => {
    const records = logRecords(worker.output());
    return {
      unreachable: records.filter((r) => r.level === 40 && /^Postgres unreachable at /.test(String(r.msg))).length,
      back: records.filter((r) => r.level === 30 && /^Postgres is back after \d+\.\d s$/.test(String(r.msg))).length,
    };
  };

  /**
   * Asks /healthz every 20 ms until stopped; returns the statuses (0: no answer). Its
   * Postgres check borrows pooled connections all the time, so some are checked out
   * when the server goes away: those must not take the process down either.
   */
  interface HealthPoll {
    /** How many answers so far (a mark for `since`). */
    count(): number;
    /** The answers after `mark`. */
    since(mark: number): number[];
    stop(): Promise<number[]>;
  }
  const pollHealth = (): HealthPoll => {
    const serving = logRecords(worker.output()).find((r) => r.msg === 'serving /healthz and /metrics');
    if (typeof serving?.port !== 'number') throw new Error(`the worker has not said where /healthz is:\n${worker.output()}`);
    const url = `http://127.0.0.1:${String(serving?.port)}/healthz`;
    const statuses: number[] = [];
    let polling = true;
    const loop = (async () => {
      while (polling) {
        try {
          const response = await fetch(url, { signal: AbortSignal.timeout(3_000) });
          await response.arrayBuffer();
          statuses.push(response.status);
        } catch {
          statuses.push(0);
        }
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();
    return {
      count: () => statuses.length,
      since: (mark) => statuses.slice(mark),
      stop: async () => {
        polling = false;
        await loop;
        return statuses;
      },
    };
  };

  /** Enqueues `sync results`, waits until it is well under way, runs `outage`, waits for the job; checks what must hold. */
  const syncThrough = async (payload: Record<string, unknown>, outage: (health: HealthPoll) => Promise<void>, outagesBefore: number): Promise<number[]> => {
    const pid = worker.child.pid;
    const job = await queue.add('sync-results', { trigger: 'cli', ...payload }, { ...defaultJobOptions(loadConfig(env)), deduplication: { id: 'sync-results' } });
    const before = await waitFor(() => runOf(job, 40), 30_000, 'forty pages of the run');
    expect(before.status).toBe('running');

    const health = pollHealth();
    await outage(health);
    // Polled until it has said healthy a few times after the outage.
    const afterOutage = health.count();
    await waitFor(async () => (health.since(afterOutage).filter((status) => status === 200).length >= 5 ? true : undefined), 30_000, '/healthz to be healthy again');
    const statuses = await health.stop();
    // /healthz answered throughout: healthy, or 503 while Postgres was away.
    expect(statuses.filter((status) => status !== 200 && status !== 503)).toEqual([]);

    const summary = (await job.waitUntilFinished(events, 60_000)) as Record<string, unknown>;
    // The same process throughout, still running.
    expect(worker.child.pid).toBe(pid);
    expect(worker.child.exitCode).toBeNull();
    expect(worker.output()).not.toMatch(/Unhandled|uncaught/i);

    // The outage spent no attempt: the only one counted is the one that completed.
    const finished = await queue.getJob(String(job.id));
    expect(finished?.attemptsMade).toBe(1);
    // It did meet the outage, and went back to wait for Postgres rather than failing.
    // (The log line may reach us through the pipe a moment after Redis said "completed".)
    const jobLines = (): Array<Record<string, unknown>> => logRecords(worker.output()).filter((r) => r.jobId === job.id && r.msg === 'job finished');
    await waitFor(async () => (jobLines().some((r) => r.outcome === 'completed') ? true : undefined), 5_000, 'the "job finished" line');
    expect(jobLines().map((r) => r.outcome)).toContain('waiting-for-postgres');
    expect(jobLines().at(-1)).toMatchObject({ outcome: 'completed', resource: 'results', inserted: expect.any(Number) });

    // One run, resumed across the outage, ended succeeded; it counted every page once or more.
    const { rows: runs } = await pool.query<{ id: number; status: string; pages: number }>(
      'select id, status, pages from trainsync.runs where job_id = $1',
      [String(job.id)],
    );
    expect(runs).toEqual([{ id: before.id, status: 'succeeded', pages: expect.any(Number) }]);
    expect(summary).toMatchObject({ resource: 'results', runId: before.id, mode: 'full', windowsResumed: 1 });
    const failed = await pool.query("select count(*)::int as n from trainsync.runs where status <> 'succeeded'");
    expect(failed.rows[0]?.n).toBe(0);

    // The warehouse equals the platform, each result once.
    expect(await warehouseResults(pool)).toEqual(simulatorResults(sim.state));
    const dupes = await pool.query('select count(*)::int as n from (select result_id from training.results group by result_id having count(*) > 1) d');
    expect(dupes.rows[0]?.n).toBe(0);

    // Logged once at its start and once at its end, however many retries it took.
    expect(outageLines()).toEqual({ unreachable: outagesBefore + 1, back: outagesBefore + 1 });
    return statuses;
  };

  it('survives a restart in the middle of the first results sync and resumes it from its checkpoint', async () => {
    await syncThrough({}, async () => own.restart(), 0);
  });

  it('survives a crash (stopped immediately, down until /healthz says so) in the middle of a full re-read', async () => {
    // Something to change, so the second run writes as well as reads.
    const ids = allResults(sim.state).map((r) => r.id);
    for (const id of ids.slice(0, 150)) updateResult(sim.state, id, { score: 1 });
    for (const id of ids.slice(150, 170)) removeResult(sim.state, id);
    for (let i = 0; i < 30; i += 1) addResult(sim.state);

    const statuses = await syncThrough(
      { full: true },
      async (health) => {
        const beforeCrash = health.count();
        await own.stop('immediate');
        // Down until the worker has noticed: its /healthz answers 503.
        await waitFor(async () => (health.since(beforeCrash).includes(503) ? true : undefined), 30_000, '/healthz to report Postgres down');
        await own.start();
      },
      1,
    );
    const records = logRecords(worker.output());
    const back = records.filter((r) => /^Postgres is back after/.test(String(r.msg)));
    // The end of the outage says how long it lasted; /healthz said so meanwhile.
    expect(Number(back.at(-1)?.seconds)).toBeGreaterThanOrEqual(0);
    expect(statuses).toContain(503);

    // And it still stops cleanly.
    worker.child.kill('SIGTERM');
    expect(await worker.exited).toBe(0);
  });
});

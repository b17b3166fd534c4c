import { spawn, type ChildProcess } from 'node:child_process';
import { DEFAULT_ORG } from '../src/settings/orgs-file.ts';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SYNC_QUEUE } from '../src/queue/names.ts';
import { runCli } from './helpers/cli.ts';
import { createSyncHarness, type SyncHarness } from './helpers/sync-harness.ts';
import { waitFor } from './helpers/worker-process.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** A sync killed from outside leaves its job behind: `status` says so, `cancel` removes it, a new `sync` takes it over. */
describe('orphaned sync jobs', () => {
  let h: SyncHarness;
  const children: ChildProcess[] = [];
  const backfill = ['sync', 'results', '--since', '2024-01-01', '--until', '2024-12-31'];

  beforeAll(async () => {
    h = await createSyncHarness({
      simulator: { sizes: { results: 2_500, resultsFrom: '2024-01-01', resultsTo: '2024-12-31' }, faults: { latencyMs: 25 } },
      // One window at a time, and the default one-minute lock: an orphan is known by its worker being gone, not by waiting.
      env: { TRAINSYNC_RESULTS_CONCURRENCY: '1', TRAINSYNC_RESULTS_WINDOW_DAYS: '7' },
    });
  });
  afterAll(async () => {
    for (const child of children) child.kill('SIGKILL');
    await h?.close();
  });

  /** Starts `trainsync <args>` and kills it (SIGKILL) once its job is running and has a run; returns the job id. */
  async function killMidway(args: string[]): Promise<string> {
    const child = spawn(process.execPath, [path.join(ROOT, 'bin/trainsync.js'), ...args], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...h.env }, stdio: 'ignore' });
    children.push(child);
    const exited = new Promise((resolve) => child.on('exit', resolve));
    const jobId = await waitFor(
      async () => {
        const job = await h.app.queue.deduplicated(SYNC_QUEUE, 'sync-results', DEFAULT_ORG);
        if (job?.state !== 'active') return undefined;
        const { rowCount } = await h.database.pool.query("select 1 from trainsync.checkpoints where key like $1 and key like '%:window:%'", [`results:job:${job.id}:%`]);
        const { rowCount: runs } = await h.database.pool.query("select 1 from trainsync.runs where job_id = $1 and status = 'running'", [job.id]);
        return (rowCount ?? 0) >= 2 || (args.includes('--full') && (runs ?? 0) > 0) ? job.id : undefined;
      },
      60_000,
      'the sync to be running',
    );
    child.kill('SIGKILL');
    await exited;
    return jobId;
  }

  const runStatus = async (jobId: string): Promise<string[]> =>
    (await h.database.pool.query<{ status: string }>('select status from trainsync.runs where job_id = $1 order by id', [jobId])).rows.map((r) => r.status);

  it('status tells the orphan; the same sync again takes it over at once and resumes its windows', async () => {
    const jobId = await killMidway(backfill);
    const status = await runCli(['status', '--json'], h.env);
    expect(status.code).toBe(0);
    const report = JSON.parse(status.stdout) as { activeJobs: Array<{ id: string; state: string }>; runs: Array<{ resource: string; status: string }> };
    expect(report.activeJobs).toEqual([expect.objectContaining({ id: jobId, state: expect.stringMatching(/^orphaned \(worker \S+:\d+ gone\)$/) })]);
    expect(report.runs.find((r) => r.resource === 'results')?.status).toMatch(/^orphaned/);

    const again = await runCli([...backfill, '--json'], h.env);
    expect(again.code, again.stderr).toBe(0);
    const [outcome] = JSON.parse(again.stdout) as Array<{ jobId: string; status: string; result: { windowsResumed: number; status: string } }>;
    // The same job, put back in the queue: its finished windows are not read again.
    expect(outcome).toMatchObject({ jobId, status: 'completed', result: { status: 'succeeded' } });
    expect(outcome!.result.windowsResumed).toBeGreaterThanOrEqual(2);
    expect(again.stderr).toContain('took over an orphaned sync');
    expect(await runStatus(jobId)).toEqual(['succeeded']);
  });

  it('cancel removes an orphaned job and records its run as cancelled; a second cancel has nothing to do', async () => {
    const jobId = await killMidway(['sync', 'results', '--full']);
    const cancel = await runCli(['cancel', 'results'], h.env);
    expect(cancel.code, cancel.stderr).toBe(0);
    expect(cancel.stdout).toMatch(new RegExp(`^cancelled job ${jobId} \\(sync-results, orphaned: worker \\S+ is gone\\); its run recorded as cancelled`));
    expect(await runStatus(jobId)).toEqual(['cancelled']);
    expect(await h.app.queue.deduplicated(SYNC_QUEUE, 'sync-results', DEFAULT_ORG)).toBeUndefined();
    const again = await runCli(['cancel', jobId], h.env);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/no job \d+ in any queue/);
  });

  it('a new sync with other options replaces an orphan instead of being refused', async () => {
    const jobId = await killMidway(['sync', 'results', '--full']);
    const run = await runCli(['sync', 'results', '--since', '2024-06-01', '--until', '2024-06-30'], h.env);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).not.toContain('already');
    expect(await runStatus(jobId)).toEqual(['cancelled']);
  });

  it('a job a live worker runs is not cancelled', async () => {
    // Slow pages, so the job is still running while both commands look at it.
    h.sim.setFaults({ latencyMs: 1_000 });
    const queued = await h.app.queue.add('sync-results', { trigger: 'cli', since: '2024-01-01', until: '2024-12-31', full: false }, { org: DEFAULT_ORG, dedupeId: 'sync-results' });
    const worker = await h.app.queue.startWorkers([SYNC_QUEUE]);
    try {
      await waitFor(async () => ((await h.app.queue.state(SYNC_QUEUE, queued.id)) === 'active' ? true : undefined), 30_000, 'the job to start');
      const cancel = await runCli(['cancel', queued.id], h.env);
      expect(cancel.code, cancel.stderr).toBe(2);
      expect(cancel.stderr).toMatch(new RegExp(`job ${queued.id} \\(sync-results\\) is running on worker \\S+; stop that process`));
      const status = await runCli(['status', '--json'], h.env);
      const report = JSON.parse(status.stdout) as { activeJobs: Array<{ id: string; state: string }> };
      expect(report.activeJobs).toEqual([expect.objectContaining({ id: queued.id, state: expect.stringMatching(/^running \(worker \S+\)$/) })]);
    } finally {
      h.sim.setFaults({ latencyMs: 25 });
      await worker.close();
    }
  });
});

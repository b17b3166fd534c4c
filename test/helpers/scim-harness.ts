import { owner } from './owner.ts';
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { PROVISION_QUEUE } from '../../src/queue/names.ts';
import type { WorkerHandle } from '../../src/queue/worker.ts';
import { startScimService, type ScimService } from '../../src/scim/service.ts';
import { observeScim } from '../../src/runtime/metrics.ts';
import type { SimulatorOptions } from '../../src/simulator/index.ts';
import { createSyncHarness, type SyncHarness } from './sync-harness.ts';
import { waitFor } from './worker-process.ts';

/**
 * A sync harness (simulator, own database, own BullMQ prefix) plus the SCIM service as
 * `worker` starts it and a worker on the provision queue, all in this process; groups
 * are synced first so /Groups can map them.
 */
/** A SCIM response body as the tests read it (a resource, a list or an error): loosely typed, the tests index into many shapes. */
type ScimJson = any;

export interface ScimHarness extends SyncHarness {
  token: string;
  service: ScimService;
  worker: WorkerHandle;
  /** http://127.0.0.1:<port>/scim/v2 */
  base: string;
  /** Every request and response so far, as text (for the closing note). */
  transcript: string[];
  request(method: string, path: string, body?: unknown, options?: { token?: string | null; raw?: string }): Promise<{ status: number; json: ScimJson }>;
  /** Waits until every SCIM change is planned and every provisioning action it queued has finished. */
  settled(): Promise<void>;
}

export interface ScimHarnessOptions {
  env?: Record<string, string>;
  simulator?: SimulatorOptions;
}

export async function createScimHarness(options: ScimHarnessOptions = {}): Promise<ScimHarness> {
  const token = randomBytes(24).toString('hex');
  const h = await createSyncHarness({
    simulator: { sizes: { users: 20, groups: 3, courses: 4, results: 10 }, ...options.simulator },
    env: { TRAINSYNC_SCIM_TOKEN: token, TRAINSYNC_SCIM_PORT: '0', TRAINSYNC_SCIM_HOST: '127.0.0.1', TRAINSYNC_SCIM_SWEEP_MS: '200', ...options.env },
  });
  await h.sync(['groups']);
  const service = await startScimService({
    config: h.config, scopes: h.app.scopes, locks: h.app.locks, queue: h.app.queue, platform: h.app.platform, log: h.app.log,
    // As `worker` wires it (src/commands/worker.ts).
    onQuarantined: (org, count) => h.app.metrics.scimQuarantined.inc({ org }, count),
    onAnswered: observeScim(h.app.metrics),
  });
  if (!service) throw new Error('the SCIM service did not start: is TRAINSYNC_SCIM_TOKEN set?');
  const worker = await h.app.queue.startWorkers([PROVISION_QUEUE]);
  const base = `http://127.0.0.1:${service.port}/scim/v2`;
  const transcript: string[] = [];
  const close = h.close;
  return {
    ...h,
    token,
    service,
    worker,
    base,
    transcript,
    async request(method, path, body, opts = {}) {
      const headers: Record<string, string> = { 'content-type': 'application/scim+json' };
      const bearer = opts.token === undefined ? token : opts.token;
      if (bearer !== null) headers.authorization = `Bearer ${bearer}`;
      const text = opts.raw ?? (body === undefined ? undefined : JSON.stringify(body));
      const response = await fetch(`${base}${path}`, { method, headers, ...(text === undefined ? {} : { body: text }) });
      const answer = await response.text();
      let json: ScimJson = answer;
      try {
        json = answer === '' ? undefined : JSON.parse(answer);
      } catch {
        // not JSON: kept as text
      }
      transcript.push(`> ${method} /scim/v2${path}${text === undefined ? '' : `\n${text}`}\n< ${response.status}${answer === '' ? '' : `\n${answer}`}\n`);
      return { status: response.status, json };
    },
    async settled() {
      await waitFor(
        async () => {
          await service.idle();
          const { pending } = await owner(h.app).db.selectFrom('trainsync.scim_users').select(sql<number>`count(*)::int`.as('pending')).where('pending', '=', true).executeTakeFirstOrThrow();
          const { open } = await owner(h.app).db
            .selectFrom('trainsync.provisioning_actions')
            .select(sql<number>`count(*)::int`.as('open'))
            .where('status', 'in', ['planned', 'queued'])
            .executeTakeFirstOrThrow();
          return pending === 0 && open === 0 ? true : undefined;
        },
        90_000,
        'SCIM changes planned and their provisioning actions finished',
      );
    },
    async close() {
      await service.close();
      await worker.close();
      await close();
    },
  };
}

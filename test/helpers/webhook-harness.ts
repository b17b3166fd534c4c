import { owner } from './owner.ts';
import { createHmac, randomBytes } from 'node:crypto';
import type { WorkerHandle } from '../../src/queue/worker.ts';
import { WEBHOOK_QUEUE } from '../../src/queue/names.ts';
import type { SimulatorOptions } from '../../src/simulator/index.ts';
import { startWebhookService, type WebhookService } from '../../src/webhooks/service.ts';
import { createSyncHarness, type SyncHarness } from './sync-harness.ts';
import { waitFor } from './worker-process.ts';

/**
 * A sync harness plus the webhook receiver and sweep exactly as `worker` starts them,
 * in this process; the simulator delivers its signed events to the receiver. With
 * `worker: true` this process also works the webhooks queue.
 */
export interface WebhookHarness extends SyncHarness {
  secret: string;
  service: WebhookService;
  /** http://127.0.0.1:<port>/webhooks/platform */
  webhookUrl: string;
  worker: WorkerHandle | undefined;
  /** POSTs a body to the receiver as given, with these headers. */
  post(body: string | Buffer, headers?: Record<string, string>): Promise<{ status: number; json: unknown }>;
  /** The signature of `body` under `secret` (default: the harness's own), base64 or hex. */
  sign(body: string, encoding?: 'base64' | 'hex', secret?: string): string;
  /** Waits until the event's row has an outcome; returns it. */
  outcomeOf(eventId: string, timeoutMs?: number): Promise<string>;
}

export interface WebhookHarnessOptions {
  env?: Record<string, string>;
  simulator?: SimulatorOptions;
  worker?: boolean;
}

export async function createWebhookHarness(options: WebhookHarnessOptions = {}): Promise<WebhookHarness> {
  const secret = randomBytes(32).toString('base64');
  const h = await createSyncHarness({
    simulator: {
      sizes: { results: 200, users: 50, courses: 10, resultsFrom: '2024-01-01', resultsTo: '2024-12-31' },
      ...options.simulator,
      webhooks: { secret, retryBaseMs: 100, retryMaxMs: 1_000, ...options.simulator?.webhooks },
    },
    env: { TRAINSYNC_WEBHOOK_SECRET: secret, TRAINSYNC_WEBHOOK_PORT: '0', TRAINSYNC_WEBHOOK_HOST: '127.0.0.1', ...options.env },
  });
  const service = await startWebhookService({ config: h.config, scopes: h.app.scopes, queue: h.app.queue, metrics: h.app.metrics, log: h.app.log });
  if (!service) throw new Error('the webhook service did not start: is TRAINSYNC_WEBHOOK_SECRET set?');
  const webhookUrl = `http://127.0.0.1:${service.port}/webhooks/platform`;
  h.sim.webhooks.configure({ url: webhookUrl });
  const worker = options.worker ? await h.app.queue.startWorkers([WEBHOOK_QUEUE]) : undefined;
  const close = h.close;
  return {
    ...h,
    secret,
    service,
    webhookUrl,
    worker,
    async post(body, headers = {}) {
      const response = await fetch(webhookUrl, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
      const text = await response.text();
      let json: unknown = text;
      try {
        json = JSON.parse(text);
      } catch {
        // not JSON: kept as text
      }
      return { status: response.status, json };
    },
    sign(body, encoding = 'base64', key = secret) {
      return createHmac('sha256', Buffer.from(key, 'base64')).update(body).digest(encoding);
    },
    async outcomeOf(eventId, timeoutMs = 30_000) {
      return waitFor(
        async () => {
          const row = await h.database.db.selectFrom('trainsync.webhook_events').select('outcome').where('event_id', '=', eventId.toLowerCase()).executeTakeFirst();
          return row?.outcome ?? undefined;
        },
        timeoutMs,
        `an outcome for event ${eventId}`,
      );
    },
    async close() {
      h.sim.webhooks.close();
      await service.close();
      await worker?.close();
      await close();
    },
  };
}

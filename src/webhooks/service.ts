import type { Kysely } from 'kysely';
import type { Config } from '../config.ts';
import type { Logger } from '../runtime/log.ts';
import type { Metrics } from '../runtime/metrics.ts';
import type { JobQueue } from '../queue/job-queue.ts';
import type { Database } from '../warehouse/database.ts';
import type { PgLender } from '../warehouse/transaction.ts';
import { startWebhookReceiver } from './receiver.ts';
import { startSweeper } from './sweep.ts';

export interface WebhookServiceDeps {
  config: Config;
  db: Kysely<Database>;
  withPgClient: PgLender;
  queue: Pick<JobQueue, 'add'>;
  metrics: Metrics;
  log: Logger;
}

export interface WebhookService {
  port: number;
  /** Stops taking events (requests in flight finish), then the sweep. */
  close(): Promise<void>;
}

/**
 * What `worker` runs for webhooks: the receiver on TRAINSYNC_WEBHOOK_PORT and the sweep
 * of stored events not yet processed. Off (undefined) unless TRAINSYNC_WEBHOOK_SECRET is set.
 */
export async function startWebhookService(deps: WebhookServiceDeps): Promise<WebhookService | undefined> {
  const { config, log } = deps;
  const keys = config.TRAINSYNC_WEBHOOK_SECRET;
  if (keys === undefined) {
    log.debug('webhook receiver off: TRAINSYNC_WEBHOOK_SECRET is not set');
    return undefined;
  }
  const receiver = await startWebhookReceiver({ config, keys, withPgClient: deps.withPgClient, queue: deps.queue, metrics: deps.metrics, log });
  const sweeper = startSweeper(
    { db: deps.db, queue: deps.queue, log },
    { intervalMs: config.TRAINSYNC_WEBHOOK_SWEEP_MS, retentionDays: config.TRAINSYNC_WEBHOOK_RETENTION_DAYS },
  );
  return {
    port: receiver.port,
    async close() {
      await receiver.close();
      await sweeper.stop();
    },
  };
}

import type { Config } from '../config.ts';
import type { Logger } from '../runtime/log.ts';
import type { Metrics } from '../runtime/metrics.ts';
import type { JobQueue } from '../queue/job-queue.ts';
import type { OrgScopes } from '../warehouse/scope.ts';
import { startWebhookReceiver, type WebhookOrg } from './receiver.ts';
import { startSweeper } from './sweep.ts';
import { startRefusalTally } from './refusal-tally.ts';

export interface WebhookServiceDeps {
  config: Config;
  /** Each organisation's scoped handle; the sweep works across them through the named escape. */
  scopes: OrgScopes;
  queue: Pick<JobQueue, 'add'>;
  metrics: Metrics;
  log: Logger;
}

export interface WebhookService {
  port: number;
  /** Writes the counts of refused signatures now (they are written every few seconds anyway). */
  flushRefusals(): Promise<void>;
  /** Stops taking events (requests in flight finish), then the sweep. */
  close(): Promise<void>;
}

/** The organisations that take webhooks: those with a secret (the default one's is TRAINSYNC_WEBHOOK_SECRET). */
export function webhookOrgs(config: Pick<Config, 'orgs'>): WebhookOrg[] {
  return config.orgs.flatMap((org) => (org.webhookSecrets && org.webhookSecrets.length > 0 ? [{ slug: org.slug, keys: org.webhookSecrets }] : []));
}

/**
 * What `worker` runs for webhooks: one receiver on TRAINSYNC_WEBHOOK_PORT with a path
 * per organisation, and one sweep of stored events not yet processed (every
 * organisation's). Off (undefined) unless some organisation has a webhook secret.
 */
export async function startWebhookService(deps: WebhookServiceDeps): Promise<WebhookService | undefined> {
  const { config, log } = deps;
  const orgs = webhookOrgs(config);
  if (orgs.length === 0) {
    log.debug('webhook receiver off: no organisation has a webhook secret (TRAINSYNC_WEBHOOK_SECRET, or webhookSecret in the orgs file)');
    return undefined;
  }
  const refusalTally = startRefusalTally({ log });
  const receiver = await startWebhookReceiver({ config, orgs, scopes: deps.scopes, queue: deps.queue, metrics: deps.metrics, log, refusalTally });
  const sweeper = startSweeper(
    { scopes: deps.scopes, queue: deps.queue, log },
    { intervalMs: config.TRAINSYNC_WEBHOOK_SWEEP_MS, retentionDays: config.TRAINSYNC_WEBHOOK_RETENTION_DAYS },
  );
  return {
    port: receiver.port,
    flushRefusals: () => refusalTally.flush(),
    async close() {
      await receiver.close();
      await refusalTally.close();
      await sweeper.stop();
    },
  };
}

import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { z } from 'zod';
import type { RequestEvent } from '../platform/types.ts';
import type { JobCatalog } from '../queue/catalog.ts';

/**
 * Prometheus metrics of one process; a registry per instance keeps tests independent.
 * Request, job, row and webhook metrics carry `org` (the organisation's slug, `default`
 * without an orgs file), so a dashboard can split or sum them; queue counts stay per
 * queue (one queue serves every organisation) and dependency health is the process's.
 */
export interface Metrics {
  registry: Registry;
  rowsLoaded: Counter<'org' | 'table' | 'outcome'>;
  apiRequests: Counter<'org' | 'method' | 'status'>;
  apiDuration: Histogram<'org' | 'method'>;
  /** Platform requests per finished sync run, by resource (from the run's summary). */
  runRequests: Histogram<'org' | 'resource'>;
  jobDuration: Histogram<'org' | 'job' | 'outcome'>;
  queueJobs: Gauge<'queue' | 'state'>;
  /** 1 when the dependency answered the health check of this scrape, 0 when not (set by the health server). */
  dependencyUp: Gauge<'service'>;
  /** Webhook deliveries by event type and what the receiver did (stored, duplicate, test-unsigned, malformed). */
  webhookReceived: Counter<'org' | 'type' | 'outcome'>;
  /** Webhook events settled by jobs, by type and outcome (loaded, not-found). */
  webhookProcessed: Counter<'org' | 'type' | 'outcome'>;
  /** Deliveries refused with 401: reason `missing` or `invalid`. */
  webhookSignatureFailures: Counter<'org' | 'reason'>;
  /** Seconds from an event's receipt (received_at) to the transaction that wrote its last result. */
  webhookDelivery: Histogram<'org' | 'type'>;
  /** A platform request of the organisation `org` (its client's hook). */
  observeRequest(event: RequestEvent, org: string): void;
}

export function createMetrics(collectQueueCounts?: () => Promise<Array<{ queue: string; counts: Record<string, number> }>>): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'trainsync_' });
  const rowsLoaded = new Counter({
    name: 'trainsync_rows_loaded_total',
    help: 'Warehouse rows written by sync jobs, by table and outcome (inserted, updated, unchanged, quarantined, removed).',
    labelNames: ['org', 'table', 'outcome'] as const,
    registers: [registry],
  });
  const apiRequests = new Counter({
    name: 'trainsync_api_requests_total',
    help: 'HTTP requests to the platform API by method and status (status "error" for no response).',
    labelNames: ['org', 'method', 'status'] as const,
    registers: [registry],
  });
  const apiDuration = new Histogram({
    name: 'trainsync_api_request_duration_seconds',
    help: 'Platform API request duration.',
    labelNames: ['org', 'method'] as const,
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
  const runRequests = new Histogram({
    name: 'trainsync_run_requests',
    help: 'Platform requests per finished sync run (every HTTP attempt: retries and pages read again included), by resource.',
    labelNames: ['org', 'resource'] as const,
    buckets: [1, 10, 50, 100, 500, 1_000, 5_000, 20_000, 100_000],
    registers: [registry],
  });
  const jobDuration = new Histogram({
    name: 'trainsync_job_duration_seconds',
    help: 'Job run time by job name and outcome.',
    labelNames: ['org', 'job', 'outcome'] as const,
    buckets: [0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600],
    registers: [registry],
  });
  const queueJobs = new Gauge({
    name: 'trainsync_queue_jobs',
    help: 'Jobs per queue and state, read from Redis at scrape time.',
    labelNames: ['queue', 'state'] as const,
    registers: [registry],
    async collect() {
      if (!collectQueueCounts) return;
      const all = await collectQueueCounts();
      // None when Redis is down or slow: report no counts rather than stale ones.
      if (all.length === 0) this.reset();
      for (const { queue, counts } of all) {
        for (const [state, count] of Object.entries(counts)) this.set({ queue, state }, count);
      }
    },
  });
  const dependencyUp = new Gauge({
    name: 'trainsync_dependency_up',
    help: 'Whether a dependency (service="postgres" or "redis") answered the health check at scrape time: 1 yes, 0 no.',
    labelNames: ['service'] as const,
    registers: [registry],
  });
  const webhookReceived = new Counter({
    name: 'trainsync_webhook_events_received_total',
    help: 'Webhook deliveries by organisation, event type (other for unknown types) and outcome: stored, duplicate, test-unsigned, malformed, organisation-mismatch (signed, but its organisationId is not the organisation\'s: 403).',
    labelNames: ['org', 'type', 'outcome'] as const,
    registers: [registry],
  });
  const webhookProcessed = new Counter({
    name: 'trainsync_webhook_events_processed_total',
    help: 'Webhook events settled by load-webhook-result jobs, by type and outcome: loaded, not-found (left to the nightly sync). A permanent failure fails its job instead (trainsync_job_duration_seconds{outcome="failed"}).',
    labelNames: ['org', 'type', 'outcome'] as const,
    registers: [registry],
  });
  const webhookSignatureFailures = new Counter({
    name: 'trainsync_webhook_signature_failures_total',
    help: 'Webhook deliveries refused with 401 for a missing or invalid signature (never stored, never processed).',
    labelNames: ['org', 'reason'] as const,
    registers: [registry],
  });
  const webhookDelivery = new Histogram({
    name: 'trainsync_webhook_delivery_seconds',
    help: 'Delivery to row: from receiving a webhook event (received_at) to the transaction that wrote its last result into training.results.',
    labelNames: ['org', 'type'] as const,
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300, 900, 3600],
    registers: [registry],
  });
  return {
    registry,
    rowsLoaded,
    apiRequests,
    apiDuration,
    runRequests,
    jobDuration,
    queueJobs,
    dependencyUp,
    webhookReceived,
    webhookProcessed,
    webhookSignatureFailures,
    webhookDelivery,
    observeRequest(event, org) {
      apiRequests.inc({ org, method: event.method, status: event.status === undefined ? 'error' : String(event.status) });
      apiDuration.observe({ org, method: event.method }, event.ms / 1000);
    },
  };
}

/** What a load does to rows: the `outcome` label of trainsync_rows_loaded_total. */
const ROW_OUTCOMES = ['inserted', 'updated', 'unchanged', 'quarantined', 'removed'] as const;

const rowCountsSchema = z.looseObject(Object.fromEntries(ROW_OUTCOMES.map((key) => [key, z.number().optional()])) as Record<(typeof ROW_OUTCOMES)[number], z.ZodOptional<z.ZodNumber>>);

const runRequestsSchema = z.looseObject({ requests: z.number() });

const webhookEventsSchema = z.object({
  webhookEvents: z.array(z.object({ type: z.string(), outcome: z.string(), seconds: z.number() })),
});

/**
 * The worker's `onFinished` hook: job durations, webhook events settled, and rows by
 * table and outcome for every job that declares a resource in the catalog.
 */
export function observeJobs(metrics: Metrics, catalog: JobCatalog): (name: string, outcome: string, seconds: number, result: unknown, org: string) => void {
  return (name, outcome, seconds, result, org) => {
    metrics.jobDuration.observe({ org, job: name, outcome }, seconds);
    const settled = webhookEventsSchema.safeParse(result);
    for (const event of settled.success ? settled.data.webhookEvents : []) {
      metrics.webhookProcessed.inc({ org, type: event.type, outcome: event.outcome });
      if (event.outcome === 'loaded') metrics.webhookDelivery.observe({ org, type: event.type }, event.seconds);
    }
    const table = catalog.get(name)?.resource;
    const counts = rowCountsSchema.safeParse(result);
    if (table === undefined || !counts.success) return;
    for (const key of ROW_OUTCOMES) {
      const value = counts.data[key];
      if (value) metrics.rowsLoaded.inc({ org, table, outcome: key }, value);
    }
    const requests = runRequestsSchema.safeParse(result);
    if (requests.success) metrics.runRequests.observe({ org, resource: table }, requests.data.requests);
  };
}

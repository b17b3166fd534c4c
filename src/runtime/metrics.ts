import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { z } from 'zod';
import type { RequestEvent } from '../platform/types.ts';
import type { JobCatalog } from '../queue/catalog.ts';
import { SYNC_QUEUE } from '../queue/names.ts';
import { perScrape } from './per-scrape.ts';
import { registerStateGauges, type StateSnapshot } from './state-metrics.ts';

/**
 * Prometheus metrics of one process; a registry per instance keeps tests independent.
 * Request, job, row and webhook metrics carry `org` (the organisation's slug, `default`
 * without an orgs file), so a dashboard can split or sum them; queue counts stay per
 * queue (one queue serves every organisation) and dependency health is the process's.
 *
 * Bounded: with 1,000 organisations a slug on every series of every histogram would be
 * 1,000 times the series. Only the first `orgLabels` organisations of the orgs file (all of
 * them up to 50 by default; TRAINSYNC_METRICS_ORG_LABELS) keep their slug on those; the
 * others are summed under `org="_other"`. The small series an operator alerts on stay per
 * organisation whatever the cap: the last successful job's time, failed jobs, and the state
 * gauges read from Postgres at each scrape (src/runtime/state-metrics.ts).
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
  /** Worker processes connected to each queue, read from Redis at scrape time. */
  queueWorkers: Gauge<'queue'>;
  /** Sync runs by how they ended: succeeded, incomplete (a job that completed), failed (each failed attempt). */
  syncRuns: Counter<'org' | 'resource' | 'status'>;
  /** The request budget of the organisation's API key (requests per second), for the organisations with their own label. */
  requestBudget: Gauge<'org'>;
  /** SCIM requests answered, by method and status (org `none`: a path of no organisation served). */
  scimRequests: Counter<'org' | 'method' | 'status'>;
  /** SCIM request duration, from the request's arrival to its answer. */
  scimDuration: Histogram<'org' | 'method'>;
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
  /** Per organisation whatever the cap: when its last job succeeded (end time, Unix seconds), as this process saw it. */
  orgLastSuccess: Gauge<'org'>;
  /** Per organisation whatever the cap: jobs that failed (each attempt that ended in failure). */
  orgJobFailures: Counter<'org'>;
  /** Per organisation whatever the cap: SCIM Users quarantined (their change cannot be planned; `trainsync status` lists them). */
  scimQuarantined: Counter<'org'>;
  /** A platform request of the organisation `org` (its client's hook). */
  observeRequest(event: RequestEvent, org: string): void;
}

/** The `org` value of the organisations past the cap. */
export const OTHER_ORGS = '_other';

export interface MetricsOptions {
  /** The configured organisations, in the orgs file's order. */
  orgs?: readonly string[];
  /** How many of them keep their own `org` label on every series (Infinity: every one; 0: none). */
  orgLabels?: number;
  /** Each organisation's request budget (requests per second of its key). */
  budgets?: ReadonlyArray<{ org: string; requestsPerSecond: number }>;
  /** Reads the state the alerts ask of Postgres, at each scrape (src/runtime/state-metrics.ts); none: no state gauges. */
  readState?: () => Promise<StateSnapshot>;
}

/** What the scrape reads of one queue in Redis: jobs per state, and the worker processes connected (when Redis says). */
export interface QueueReading {
  queue: string;
  counts: Record<string, number>;
  workers?: number;
}

/** The `org` label value of an organisation under the cap. */
export function orgLabeller(options: MetricsOptions): (org: string) => string {
  if (options.orgLabels === Number.POSITIVE_INFINITY || options.orgs === undefined) return (org) => org;
  const kept = new Set(options.orgs.slice(0, options.orgLabels ?? DEFAULT_ORG_LABELS));
  return (org) => (kept.has(org) ? org : OTHER_ORGS);
}

/** Organisations with their own label when TRAINSYNC_METRICS_ORG_LABELS is unset. */
export const DEFAULT_ORG_LABELS = 50;

type OrgLabelled = { inc?: unknown; observe?: unknown };

/**
 * The metric with its `org` label passed through `label` on inc and observe (every caller,
 * the webhook receiver's included, keeps naming the organisation; the cap is applied here).
 */
function capped<T extends OrgLabelled>(metric: T, label: (org: string) => string): T {
  return new Proxy(metric, {
    get(target, key, receiver) {
      const value: unknown = Reflect.get(target, key, receiver);
      if ((key !== 'inc' && key !== 'observe') || typeof value !== 'function') return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      return (labels: unknown, ...rest: unknown[]) => {
        const relabelled = typeof labels === 'object' && labels !== null && 'org' in labels && typeof labels.org === 'string' ? { ...labels, org: label(labels.org) } : labels;
        return (value as (...a: unknown[]) => unknown).call(target, relabelled, ...rest);
      };
    },
  });
}

export function createMetrics(collectQueueCounts?: () => Promise<QueueReading[]>, options: MetricsOptions = {}): Metrics {
  const label = orgLabeller(options);
  const registry = new Registry();
  const readQueues = collectQueueCounts ? perScrape(collectQueueCounts) : undefined;
  collectDefaultMetrics({ register: registry, prefix: 'trainsync_' });
  const rowsLoaded = capped(new Counter({
    name: 'trainsync_rows_loaded_total',
    help: 'Warehouse rows written by sync jobs, by table and outcome (inserted, updated, unchanged, quarantined, removed).',
    labelNames: ['org', 'table', 'outcome'] as const,
    registers: [registry],
  }), label);
  const rawApiRequests = new Counter({
    name: 'trainsync_api_requests_total',
    help: 'HTTP requests to the platform API by method and status (status "error" for no response).',
    labelNames: ['org', 'method', 'status'] as const,
    registers: [registry],
  });
  const apiRequests = capped(rawApiRequests, label);
  const rawApiDuration = new Histogram({
    name: 'trainsync_api_request_duration_seconds',
    help: 'Platform API request duration.',
    labelNames: ['org', 'method'] as const,
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
  const apiDuration = capped(rawApiDuration, label);
  const runRequests = capped(new Histogram({
    name: 'trainsync_run_requests',
    help: 'Platform requests per finished sync run (every HTTP attempt: retries and pages read again included), by resource.',
    labelNames: ['org', 'resource'] as const,
    buckets: [1, 10, 50, 100, 500, 1_000, 5_000, 20_000, 100_000],
    registers: [registry],
  }), label);
  const jobDuration = capped(new Histogram({
    name: 'trainsync_job_duration_seconds',
    help: 'Job run time by job name and outcome.',
    labelNames: ['org', 'job', 'outcome'] as const,
    buckets: [0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600],
    registers: [registry],
  }), label);
  const queueJobs = new Gauge({
    name: 'trainsync_queue_jobs',
    help: 'Jobs per queue and state, read from Redis at scrape time.',
    labelNames: ['queue', 'state'] as const,
    registers: [registry],
    async collect() {
      if (!readQueues) return;
      const all = await readQueues();
      // None when Redis is down or slow: report no counts rather than stale ones.
      if (all.length === 0) this.reset();
      for (const { queue, counts } of all) {
        for (const [state, count] of Object.entries(counts)) this.set({ queue, state }, count);
      }
    },
  });
  const queueWorkers = new Gauge({
    name: 'trainsync_queue_workers',
    help: 'Worker processes connected to each queue, read from Redis at scrape time (0: jobs there wait for a worker that is not running).',
    labelNames: ['queue'] as const,
    registers: [registry],
    async collect() {
      if (!readQueues) return;
      const all = await readQueues();
      this.reset();
      for (const { queue, workers } of all) if (workers !== undefined) this.set({ queue }, workers);
    },
  });
  const syncRuns = capped(new Counter({
    name: 'trainsync_sync_runs_total',
    help: 'Sync runs by resource and how they ended: succeeded, incomplete (read, with windows left for the next run), failed (each failed attempt).',
    labelNames: ['org', 'resource', 'status'] as const,
    registers: [registry],
  }), label);
  const requestBudget = new Gauge({
    name: 'trainsync_request_budget_requests_per_second',
    help: "The request budget of the organisation's API key (requests per second), shared by every process using it: for the organisations with their own org label (TRAINSYNC_METRICS_ORG_LABELS).",
    labelNames: ['org'] as const,
    registers: [registry],
  });
  for (const { org, requestsPerSecond } of options.budgets ?? []) {
    if (label(org) !== OTHER_ORGS) requestBudget.set({ org }, requestsPerSecond);
  }
  const scimRequests = capped(new Counter({
    name: 'trainsync_scim_requests_total',
    help: 'SCIM requests answered, by method and status (org "none": a path of no organisation served).',
    labelNames: ['org', 'method', 'status'] as const,
    registers: [registry],
  }), label);
  const scimDuration = capped(new Histogram({
    name: 'trainsync_scim_request_duration_seconds',
    help: 'SCIM request duration, from its arrival to its answer (a write answers once its row is stored).',
    labelNames: ['org', 'method'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  }), label);
  if (options.readState) registerStateGauges(registry, options.readState);
  const dependencyUp = new Gauge({
    name: 'trainsync_dependency_up',
    help: 'Whether a dependency (service="postgres" or "redis") answered the health check at scrape time: 1 yes, 0 no.',
    labelNames: ['service'] as const,
    registers: [registry],
  });
  const webhookReceived = capped(new Counter({
    name: 'trainsync_webhook_events_received_total',
    help: 'Webhook deliveries by organisation, event type (other for unknown types) and outcome: stored, duplicate, test-unsigned, malformed, organisation-mismatch (signed, but its organisationId is not the organisation\'s: 403).',
    labelNames: ['org', 'type', 'outcome'] as const,
    registers: [registry],
  }), label);
  const webhookProcessed = capped(new Counter({
    name: 'trainsync_webhook_events_processed_total',
    help: 'Webhook events settled by load-webhook-result jobs, by type and outcome: loaded, not-found (left to the nightly sync). A permanent failure fails its job instead (trainsync_job_duration_seconds{outcome="failed"}).',
    labelNames: ['org', 'type', 'outcome'] as const,
    registers: [registry],
  }), label);
  const webhookSignatureFailures = capped(new Counter({
    name: 'trainsync_webhook_signature_failures_total',
    help: 'Webhook deliveries refused with 401 for a missing or invalid signature (never stored, never processed).',
    labelNames: ['org', 'reason'] as const,
    registers: [registry],
  }), label);
  const webhookDelivery = capped(new Histogram({
    name: 'trainsync_webhook_delivery_seconds',
    help: 'Delivery to row: from receiving a webhook event (received_at) to the transaction that wrote its last result into training.results.',
    labelNames: ['org', 'type'] as const,
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300, 900, 3600],
    registers: [registry],
  }), label);
  const orgLastSuccess = new Gauge({
    name: 'trainsync_org_last_success_timestamp_seconds',
    help: 'When a job of the organisation last succeeded in this process (its end, Unix seconds): one series per organisation, whatever TRAINSYNC_METRICS_ORG_LABELS.',
    labelNames: ['org'] as const,
    registers: [registry],
  });
  const orgJobFailures = new Counter({
    name: 'trainsync_org_job_failures_total',
    help: 'Jobs of the organisation that ended failed in this process (each failed attempt): one series per organisation that had one, whatever TRAINSYNC_METRICS_ORG_LABELS.',
    labelNames: ['org'] as const,
    registers: [registry],
  });
  const scimQuarantined = new Counter({
    name: 'trainsync_scim_quarantined_total',
    help: 'SCIM Users of the organisation this process quarantined: answered 2xx, but their change cannot be planned (trainsync status lists them; a new PUT or PATCH plans them again). One series per organisation that had one.',
    labelNames: ['org'] as const,
    registers: [registry],
  });
  return {
    registry,
    orgLastSuccess,
    orgJobFailures,
    scimQuarantined,
    rowsLoaded,
    apiRequests,
    apiDuration,
    runRequests,
    jobDuration,
    queueJobs,
    queueWorkers,
    syncRuns,
    requestBudget,
    scimRequests,
    scimDuration,
    dependencyUp,
    webhookReceived,
    webhookProcessed,
    webhookSignatureFailures,
    webhookDelivery,
    observeRequest(event, org) {
      // Every platform request (thousands a minute in a results sync): the org label capped
      // here once, straight to the metrics, not through `capped`'s proxy (a trap, a closure,
      // a copy of the labels and the arguments per call, twice a request).
      const orgLabel = label(org);
      rawApiRequests.inc({ org: orgLabel, method: event.method, status: event.status === undefined ? 'error' : String(event.status) });
      rawApiDuration.observe({ org: orgLabel, method: event.method }, event.ms / 1000);
    },
  };
}

/** The SCIM service's `onAnswered` hook: requests by method and status, and their duration. */
export function observeScim(metrics: Metrics): (answer: { org: string; method: string; status: number; seconds: number }) => void {
  return ({ org, method, status, seconds }) => {
    metrics.scimRequests.inc({ org, method, status: String(status) });
    metrics.scimDuration.observe({ org, method }, seconds);
  };
}

/** What a load does to rows: the `outcome` label of trainsync_rows_loaded_total. */
const ROW_OUTCOMES = ['inserted', 'updated', 'unchanged', 'quarantined', 'removed'] as const;

const rowCountsSchema = z.looseObject(Object.fromEntries(ROW_OUTCOMES.map((key) => [key, z.number().optional()])) as Record<(typeof ROW_OUTCOMES)[number], z.ZodOptional<z.ZodNumber>>);

const runRequestsSchema = z.looseObject({ requests: z.number() });

/** A sync job's summary (src/sync/summary.ts): how its run ended. */
const syncRunSchema = z.looseObject({ runId: z.number(), status: z.enum(['succeeded', 'incomplete']) });

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
    if (outcome === 'completed') metrics.orgLastSuccess.set({ org }, Date.now() / 1000);
    else if (outcome === 'failed') metrics.orgJobFailures.inc({ org });
    const settled = webhookEventsSchema.safeParse(result);
    for (const event of settled.success ? settled.data.webhookEvents : []) {
      metrics.webhookProcessed.inc({ org, type: event.type, outcome: event.outcome });
      if (event.outcome === 'loaded') metrics.webhookDelivery.observe({ org, type: event.type }, event.seconds);
    }
    const definition = catalog.get(name);
    if (definition?.queue === SYNC_QUEUE && definition.resource !== undefined) {
      const run = syncRunSchema.safeParse(result);
      if (outcome === 'failed') metrics.syncRuns.inc({ org, resource: definition.resource, status: 'failed' });
      else if (outcome === 'completed' && run.success) metrics.syncRuns.inc({ org, resource: definition.resource, status: run.data.status });
    }
    const table = definition?.resource;
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

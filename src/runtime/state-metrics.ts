import { Gauge, type Registry } from 'prom-client';
import type { JobCatalog } from '../queue/catalog.ts';
import { heldPlanAgesOf } from '../provisioning/held-plans.ts';
import { scimBacklogsOf, type ScimBacklog } from '../scim/store.ts';
import { syncJobs } from '../sync/catalog-resources.ts';
import { runStreak } from '../sync/run-streak.ts';
import { runStreaksOf, type RunStreak } from '../sync/runs-store.ts';
import { syncSchedulesOf, type SyncScheduleRow } from '../sync/schedules-store.ts';
import { webhookWaitingOf } from '../webhooks/store.ts';
import type { OrgScopes } from '../warehouse/scope.ts';
import { perScrape } from './per-scrape.ts';

/**
 * The state gauges: what the alerts ask of Postgres (the last complete run of each resource
 * and its schedule, runs that failed or ended incomplete in a row, held plans, SCIM Users
 * waiting, the webhook backlog), read once per scrape. The state lives in Postgres, so every
 * worker reports the same values (the rules take `max by` organisation) and a restarted
 * worker reports what happened before it started.
 *
 * Bounded: per organisation and resource (the catalog's sync resources, six today) only the
 * pairs that have a schedule or a finished run, four series each; per organisation two series
 * for each of held plans, SCIM pending, SCIM quarantined and the webhook backlog, only while
 * there is something waiting. Every organisation keeps its own `org` whatever
 * TRAINSYNC_METRICS_ORG_LABELS: they are the series the alerts name an organisation by.
 *
 * Postgres unreachable or slow: the scrape leaves them out (no stale values), and
 * `trainsync_dependency_up{service="postgres"}` says why.
 */

/** What one read of Postgres found, in the organisations' order. */
export interface StateSnapshot {
  streaks: readonly RunStreak[];
  schedules: readonly SyncScheduleRow[];
  heldPlans: ReadonlyArray<{ org: string; plans: number; oldest: Date }>;
  scim: readonly ScimBacklog[];
  webhooks: ReadonlyArray<{ org: string; n: number; oldest: Date | null }>;
}

/** How long a scrape waits for the state before it leaves it out. */
export const STATE_TIMEOUT_MS = 3_000;

/** Reads the state of every configured organisation: five statements, over the handle that sees them all. */
export function stateReader(scopes: Pick<OrgScopes, 'acrossOrganisations'>, catalog: JobCatalog, orgs: readonly string[]): () => Promise<StateSnapshot> {
  const resources = syncJobs(catalog.values()).map((job) => job.resource!);
  return () =>
    scopes.acrossOrganisations('metrics: the state the alerts read, at each scrape', async ({ db }) => ({
      // One after another: the handle may lend one connection.
      streaks: await runStreaksOf(db, orgs, resources),
      schedules: await syncSchedulesOf(db, orgs),
      heldPlans: await heldPlanAgesOf(db, orgs),
      scim: await scimBacklogsOf(db, orgs),
      webhooks: await webhookWaitingOf(db, orgs),
    }));
}

const seconds = (date: Date): number => date.getTime() / 1000;

/** The state, or undefined when `read` failed or took longer than `timeoutMs` (the scrape goes on without it). */
async function withinTime(read: () => Promise<StateSnapshot>, timeoutMs: number): Promise<StateSnapshot | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const reading = read();
  reading.catch(() => undefined);
  try {
    return await Promise.race([reading, new Promise<undefined>((resolve) => (timer = setTimeout(resolve, timeoutMs, undefined)))]);
  } catch {
    return undefined;
  } finally {
    clearTimeout(timer);
  }
}

/** Registers the state gauges on `registry`; one read of `read` serves every gauge of a scrape. */
export function registerStateGauges(registry: Registry, read: () => Promise<StateSnapshot>, timeoutMs = STATE_TIMEOUT_MS): void {
  const snapshot = perScrape(() => withinTime(read, timeoutMs));
  const gauge = <L extends string>(name: string, help: string, labelNames: readonly L[], fill: (state: StateSnapshot, set: (labels: Record<L, string>, value: number) => void) => void): void => {
    new Gauge({
      name,
      help,
      labelNames,
      registers: [registry],
      async collect() {
        const state = await snapshot();
        this.reset();
        if (state) fill(state, (labels, value) => this.set(labels as Partial<Record<L, string>>, value));
      },
    });
  };
  gauge('trainsync_sync_last_complete_timestamp_seconds', 'When the newest succeeded run of the resource ended (Unix seconds): one series per organisation and resource that ever completed.', ['org', 'resource'], (state, set) => {
    for (const s of state.streaks) if (s.lastCompleteAt) set({ org: s.org, resource: s.resource }, seconds(s.lastCompleteAt));
  });
  gauge('trainsync_sync_schedule_interval_seconds', "The longest gap between two fires of the resource's schedule (seconds), as the worker that registers the schedules recorded it; absent when its schedule is off.", ['org', 'resource'], (state, set) => {
    for (const s of state.schedules) if (s.everySeconds !== null) set({ org: s.org, resource: s.resource }, s.everySeconds);
  });
  gauge('trainsync_sync_last_run_failed', 'Whether the newest finished run of the resource failed: 1 yes, 0 no (succeeded or incomplete). Cancelled and running runs are skipped.', ['org', 'resource'], (state, set) => {
    for (const s of state.streaks) set({ org: s.org, resource: s.resource }, runStreak(s.recent).lastFailed ? 1 : 0);
  });
  gauge('trainsync_sync_incomplete_runs_in_a_row', 'How many of the newest finished runs of the resource ended incomplete, counted until one did not (at most 10).', ['org', 'resource'], (state, set) => {
    for (const s of state.streaks) set({ org: s.org, resource: s.resource }, runStreak(s.recent).incompleteInARow);
  });
  gauge('trainsync_held_plans', 'Provisioning plans held for a person to approve or reject (trainsync held), per organisation that has one.', ['org'], (state, set) => {
    for (const h of state.heldPlans) set({ org: h.org }, h.plans);
  });
  gauge('trainsync_held_plan_oldest_timestamp_seconds', 'When the oldest plan still held was held (Unix seconds), per organisation that has one.', ['org'], (state, set) => {
    for (const h of state.heldPlans) set({ org: h.org }, seconds(h.oldest));
  });
  gauge('trainsync_scim_pending_users', 'SCIM Users written and not planned yet, per organisation that has one.', ['org'], (state, set) => {
    for (const s of state.scim) if (s.pending > 0) set({ org: s.org }, s.pending);
  });
  gauge('trainsync_scim_pending_oldest_timestamp_seconds', 'When the oldest SCIM User not planned yet was written (Unix seconds).', ['org'], (state, set) => {
    for (const s of state.scim) if (s.oldestPending) set({ org: s.org }, seconds(s.oldestPending));
  });
  gauge('trainsync_scim_quarantined_users', 'SCIM Users quarantined now (answered 2xx, change not planned; trainsync status lists them), per organisation that has one.', ['org'], (state, set) => {
    for (const s of state.scim) if (s.quarantined > 0) set({ org: s.org }, s.quarantined);
  });
  gauge('trainsync_scim_quarantined_oldest_timestamp_seconds', 'When the oldest SCIM User still quarantined was set aside (Unix seconds).', ['org'], (state, set) => {
    for (const s of state.scim) if (s.oldestQuarantined) set({ org: s.org }, seconds(s.oldestQuarantined));
  });
  gauge('trainsync_webhook_backlog_events', 'Webhook events stored and not yet processed, per organisation that has one.', ['org'], (state, set) => {
    for (const w of state.webhooks) set({ org: w.org }, w.n);
  });
  gauge('trainsync_webhook_backlog_oldest_timestamp_seconds', 'When the oldest webhook event not yet processed was received (Unix seconds).', ['org'], (state, set) => {
    for (const w of state.webhooks) if (w.oldest) set({ org: w.org }, seconds(w.oldest));
  });
}

import type { Kysely } from 'kysely';
import { attentionCounts } from '../../provisioning/apply/actions-store.ts';
import { heldPlanCountsOf } from '../../provisioning/held-plans.ts';
import { lastRunOutcomesOf, type LastRunOutcome } from '../../sync/runs-store.ts';
import { unfinishedWindowCounts } from '../../sync/sync-state.ts';
import type { Database } from '../../warehouse/database.ts';

/**
 * The facts `trainsync status` summarises over a set of organisations, composed from the
 * stores' set-based reads (`org = any($slugs)`): one statement per table for the whole set,
 * so the report costs the same few queries for 1,000 organisations as for one. The caller
 * passes a page of slugs (a few hundred at most) and a handle that sees them
 * (`acrossOrganisations` for every organisation, `scope(orgs)` for some). The detail reads
 * (last runs, watermarks, quarantine) are the stores' own: `lastRunsOf` in runs-store.ts,
 * `watermarksOf` and `quarantineOf` in sync-state.ts.
 */

/** One resource's last run in an organisation, and when it last ended well. */
export type LastRun = Omit<LastRunOutcome, 'org'>;

/** What the summary needs of one organisation. */
export interface OrgFacts {
  org: string;
  /** The last run of each resource it ever ran, by resource (none: never run). */
  last: LastRun[];
  unfinishedWindows: number;
  actionsNeedingAttention: number;
  heldPlans: number;
}

/** Facts of every organisation of `orgs`, in their order: four statements, one per store, whatever the number of organisations. */
export async function orgFacts(db: Kysely<Database>, orgs: readonly string[], resources: readonly string[]): Promise<OrgFacts[]> {
  if (orgs.length === 0) return [];
  // One after another: `db` is a transaction's handle, one connection (readOrgs).
  const outcomes = await lastRunOutcomesOf(db, orgs, resources);
  const windows = await unfinishedWindowCounts(db, orgs);
  const actions = await attentionCounts(db, orgs);
  const held = await heldPlanCountsOf(db, orgs);
  const last = new Map<string, LastRun[]>(orgs.map((org) => [org, []]));
  for (const { org, ...run } of outcomes) last.get(org)?.push(run);
  return orgs.map((org) => ({
    org,
    last: last.get(org) ?? [],
    unfinishedWindows: windows.get(org) ?? 0,
    actionsNeedingAttention: actions.get(org) ?? 0,
    heldPlans: held.get(org) ?? 0,
  }));
}

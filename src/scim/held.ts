import { sql, type Kysely } from 'kysely';
import type { Database } from '../warehouse/database.ts';
import { planUsers } from './batch.ts';
import type { ChangeDeps, ChangeOutcome } from './change.ts';
import type { HeldStatus } from './tables.ts';

/** The deactivations the guard held: listed by `status` and `trainsync scim held`, released or dropped by a person. */

export interface HeldAction {
  id: number;
  org: string;
  employeeId: string;
  scimId: string;
  email: string;
  kind: 'disable';
  status: HeldStatus;
  reason: string;
  heldAt: Date;
}

/** One organisation's held deactivations. */
export async function heldActions(db: Kysely<Database>, org: string, limit = 200): Promise<HeldAction[]> {
  const rows = await db.selectFrom('trainsync.scim_held_actions').selectAll().where('org', '=', org).where('status', '=', 'held').orderBy('id').limit(limit).execute();
  return rows.map((r) => ({ id: r.id, org: r.org, employeeId: r.employee_id, scimId: r.scim_id, email: r.email, kind: r.kind, status: r.status, reason: r.reason, heldAt: r.held_at }));
}

export class HeldActionNotFound extends Error {
  constructor(readonly id: number, readonly org: string) {
    super(`no held SCIM action ${id} of ${org}; \`trainsync scim held --org ${org}\` lists the ones still held`);
    this.name = 'HeldActionNotFound';
  }
}

async function decide(db: Kysely<Database>, org: string, id: number, status: 'released' | 'dropped'): Promise<{ employee_id: string; scim_id: string }> {
  const row = await db
    .updateTable('trainsync.scim_held_actions')
    .set({ status, decided_at: sql<Date>`now()` })
    .where('org', '=', org)
    .where('id', '=', id)
    .where('status', '=', 'held')
    .returning(['employee_id', 'scim_id'])
    .executeTakeFirst();
  if (!row) throw new HeldActionNotFound(id, org);
  return row;
}

/** Release: the deactivation goes through the guard this once (planned and enqueued now). */
export async function releaseHeld(deps: ChangeDeps, id: number): Promise<ChangeOutcome> {
  const row = await decide(deps.db, deps.org, id, 'released');
  return planUsers(deps, [row.scim_id], { released: new Set([row.employee_id]) });
}

/**
 * Drop: the deactivation is not applied, and trainsync's record of the employee goes
 * back to active (training.employees too); the identity provider still shows them
 * inactive until it pushes the user again.
 */
export async function dropHeld(deps: ChangeDeps, id: number): Promise<ChangeOutcome> {
  const row = await decide(deps.db, deps.org, id, 'dropped');
  await deps.db
    .updateTable('trainsync.scim_users')
    .set({
      active: true,
      resource: sql<string>`jsonb_set(resource, '{active}', 'true'::jsonb)`,
      pending: true,
      version: sql<number>`version + 1`,
      updated_at: sql<Date>`now()`,
    })
    .where('org', '=', deps.org)
    .where('scim_id', '=', row.scim_id)
    .execute();
  return planUsers(deps, [row.scim_id]);
}

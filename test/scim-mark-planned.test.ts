import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { markPlanned } from '../src/scim/store.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';

/**
 * markPlanned on a User changed since the version planned (a title PATCHed while its create was
 * being planned): it stays pending, and the state planned is recorded when none was, so the
 * change is settled by the queued actions instead of waiting for the sweep; never over a state
 * recorded already.
 */

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
  await t.pool.query(`insert into training.organisations (slug, name) values ('a', 'a') on conflict do nothing`);
});
afterAll(async () => {
  await t?.drop();
});

async function user(version: number, plannedState: string | null): Promise<string> {
  const scimId = randomUUID();
  await t.pool.query(
    `insert into trainsync.scim_users (org, scim_id, employee_id, user_name, active, resource, version, pending, planned_state) values ('a', $1, $2, $3, true, '{}', $4, true, $5)`,
    [scimId, `E-${scimId}`, `${scimId}@example.com`, version, plannedState],
  );
  return scimId;
}

async function stored(scimId: string): Promise<{ pending: boolean; planned_state: string | null }> {
  return (await t.pool.query<{ pending: boolean; planned_state: string | null }>(`select pending, planned_state from trainsync.scim_users where scim_id = $1`, [scimId])).rows[0]!;
}

describe('markPlanned', () => {
  it('the version planned: no longer pending, its state recorded', async () => {
    const id = await user(1, null);
    await markPlanned(t.scope('a'), [{ scimId: id, version: 1, state: 'S1' }]);
    expect(await stored(id)).toEqual({ pending: false, planned_state: 'S1' });
  });

  it('a User changed since: still pending; the state planned is recorded when none was, never over one', async () => {
    const fresh = await user(2, null);
    await markPlanned(t.scope('a'), [{ scimId: fresh, version: 1, state: 'S1' }]);
    expect(await stored(fresh)).toEqual({ pending: true, planned_state: 'S1' });
    const recorded = await user(3, 'S2');
    await markPlanned(t.scope('a'), [{ scimId: recorded, version: 1, state: 'S1' }]);
    expect(await stored(recorded)).toEqual({ pending: true, planned_state: 'S2' });
    const moot = await user(2, null);
    await markPlanned(t.scope('a'), [{ scimId: moot, version: 1, state: null }]);
    expect(await stored(moot)).toEqual({ pending: true, planned_state: null });
  });
});

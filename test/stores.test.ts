import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countOpenCreates, findAction, markCreatesResolved, recordQueuedActions, unresolvedCreates, finishAction } from '../src/provisioning/apply/actions-store.ts';
import { countIdentities, employeesWithoutAccountSql, identitiesOf, learnPlatformUserId, upsertAccountIdentity } from '../src/provisioning/apply/identities-store.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';

const U1 = '6f9619ff-8b86-d011-b42d-00c04fc964ff';
const U2 = '7f9619ff-8b86-d011-b42d-00c04fc964ff';
let t: TestDatabase;

beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(async () => {
  await t.drop();
});

const account = (employeeId: string, platformUserId: string | null) =>
  ({ employeeId, email: `${employeeId.toLowerCase()}@example.com`, platformUserId, firstName: null, lastName: null, role: null, organisationIdentifier: null, active: true }) as const;

describe('the identities and actions stores, composed as the SCIM id resolution composes them', () => {
  it('finds unresolved creates, learns a free platform id only, and records on each create what its identity holds', async () => {
    await upsertAccountIdentity(t.scope(), account('E1', null));
    await upsertAccountIdentity(t.scope(), account('E2', null));
    await upsertAccountIdentity(t.scope(), account('E3', U2));
    const create = (employeeId: string) => ({ actionId: `create-user:${employeeId}`, employeeId, email: `${employeeId.toLowerCase()}@example.com`, kind: 'create-user' as const, seq: 0, before: null, after: { lookUp: 'later' }, feedHash: null });
    await recordQueuedActions(t.scope(), [create('E1'), create('E2')]);
    expect(await countOpenCreates(t.scope())).toBe(2);
    for (const id of ['create-user:E1', 'create-user:E2']) await finishAction(t.scope(), id, { status: 'succeeded' });
    expect(await countOpenCreates(t.scope())).toBe(0);
    expect((await unresolvedCreates(t.scope(), employeesWithoutAccountSql(t.scope()))).map((c) => c.action_id).sort()).toEqual(['create-user:E1', 'create-user:E2']);

    await learnPlatformUserId(t.scope(), 'E1', U1);
    // U2 is E3's: E2 does not take it.
    await learnPlatformUserId(t.scope(), 'E2', U2);
    const held = new Map((await identitiesOf(t.scope(), ['E1', 'E2'])).map((i) => [i.employee_id, i.platform_user_id]));
    expect(Object.fromEntries(held)).toEqual({ E1: U1, E2: null });
    // A create whose identity holds an account is no longer waiting.
    expect((await unresolvedCreates(t.scope(), employeesWithoutAccountSql(t.scope()))).map((c) => c.action_id)).toEqual(['create-user:E2']);
    await markCreatesResolved(t.scope(), [
      { actionId: 'create-user:E1', platformUserId: held.get('E1') ?? null },
      { actionId: 'create-user:E2', platformUserId: held.get('E2') ?? null },
    ]);
    expect((await findAction(t.scope(), 'create-user:E1'))?.after).toEqual({ lookUp: 'later', resolved: true, platformUserId: U1 });
    expect((await findAction(t.scope(), 'create-user:E2'))?.after).toEqual({ lookUp: 'later', resolved: false, platformUserId: null });
    expect(await unresolvedCreates(t.scope(), employeesWithoutAccountSql(t.scope()))).toEqual([]);
    expect(await countIdentities(t.scope())).toEqual({ accounts: 3, active: 3 });
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from trainsync.identities where org = 'default' and platform_user_id is not null`.execute(t.db);
    expect(rows[0]?.n).toBe(2);
  });
});

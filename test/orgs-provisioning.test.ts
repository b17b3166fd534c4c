import { owner } from './helpers/owner.ts';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { provisionDeps } from '../src/commands/options/provision-deps.ts';
import { approveHeldPlan, rejectHeldPlan } from '../src/provisioning/approve-held-plan.ts';
import { listHeldPlans } from '../src/provisioning/held-plans.ts';
import { provisionFeed, type ProvisionResult } from '../src/provisioning/provision-feed.ts';
import { findUser, FOREIGN_EMAIL_DOMAIN, ORG_EMAIL_DOMAIN, type RunningSimulator } from '../src/simulator/index.ts';
import type { App } from '../src/runtime/app.ts';
import { runCli } from './helpers/cli.ts';
import { feedDir, rowsFromState, toCsv, type HrRow } from './helpers/hr-feed.ts';
import { createTwoOrgHarness, type TwoOrgHarness } from './helpers/orgs-harness.ts';

/**
 * HR feeds, provisioning and reconcile with two organisations in one warehouse (see
 * helpers/orgs-harness.ts: two simulators of the same seed, so both organisations list the
 * same people under the same GUIDs, e-mails and employee ids). A person listed by both is
 * one platform account in two organisations; their access is per organisation.
 */

let h: TwoOrgHarness;
let north: RunningSimulator;
let south: RunningSimulator;
let app: App;
let env: Record<string, string>;
let northReader: string;
let files: ReturnType<typeof feedDir>;

beforeAll(async () => {
  // South's HR export is the semicolon one: its default profile reads it without --profile.
  h = await createTwoOrgHarness({ entries: { south: { feedProfile: path.resolve('examples/semicolon-profile.json') } } });
  ({ app, env, northReader } = h);
  ({ north, south } = h.sims);
  files = feedDir();
});

afterAll(async () => {
  await h?.close();
  files?.cleanup();
});

function provision(org: 'north' | 'south', rows: readonly HrRow[], mode: 'full' | 'delta' = 'full', more: { allowShrink?: boolean } = {}): Promise<ProvisionResult> {
  const file = files.write(`${org}-${Math.random().toString(36).slice(2)}.csv`, toCsv(rows));
  return provisionFeed(provisionDeps(app, org), { file, mode, dryRun: false, force: false, ...more });
}

const joiner = (id: string, email: string): HrRow => ({ employee_id: id, email, first_name: 'Jo', last_name: `Joiner ${id}`, status: 'active', groups: [], role: 'USER', organisation_identifier: id });

async function identities(org: string): Promise<Map<string, { email: string; platform_user_id: string | null; active: boolean }>> {
  const rows = await owner(app).db.selectFrom('trainsync.identities').select(['employee_id', 'email', 'platform_user_id', 'active']).where('org', '=', org).execute();
  return new Map(rows.map((r) => [r.employee_id, r]));
}

describe('provisioning per organisation', () => {
  it('the same employee id in both feeds provisions each in its own organisation', async () => {
    const northRows = rowsFromState(north.state);
    const southRows = rowsFromState(south.state);
    // Same seed: both organisations list the same people under the same ids.
    expect(northRows.map((r) => r.employee_id)).toEqual(southRows.map((r) => r.employee_id));
    const northJoiner = joiner('J001', `north.j001${ORG_EMAIL_DOMAIN}`);
    const southJoiner = joiner('J001', `south.j001${ORG_EMAIL_DOMAIN}`);

    const n = await provision('north', [...northRows, northJoiner]);
    const s = await provision('south', [...southRows, southJoiner]);
    // Each first run adopts its own organisation's accounts (the same GUIDs: once per organisation).
    expect(n.adopted).toBe(northRows.length);
    expect(s.adopted).toBe(southRows.length);
    expect(n.plan.counts['create-user']).toBe(1);
    expect(s.plan.counts['create-user']).toBe(1);
    expect(n.applied!.audit.every((r) => r.status === 'succeeded')).toBe(true);
    expect(s.applied!.audit.every((r) => r.status === 'succeeded')).toBe(true);

    // Each joiner exists only on its organisation's platform.
    expect(findUser(north.state, northJoiner.email)).toBeDefined();
    expect(findUser(north.state, southJoiner.email)).toBeUndefined();
    expect(findUser(south.state, southJoiner.email)).toBeDefined();
    expect(findUser(south.state, northJoiner.email)).toBeUndefined();

    // One identity and one employee per (org, employee id).
    const [ni, si] = [await identities('north'), await identities('south')];
    expect(ni.get('J001')).toMatchObject({ email: northJoiner.email, platform_user_id: findUser(north.state, northJoiner.email)!.id });
    expect(si.get('J001')).toMatchObject({ email: southJoiner.email, platform_user_id: findUser(south.state, southJoiner.email)!.id });
    const shared = northRows[0]!.employee_id;
    expect(ni.get(shared)!.platform_user_id).toBe(si.get(shared)!.platform_user_id);
    const employees = await owner(app).db.selectFrom('training.employees').select(['org', 'email']).where('employee_id', '=', 'J001').orderBy('org').execute();
    expect(employees).toEqual([
      { org: 'north', email: northJoiner.email },
      { org: 'south', email: southJoiner.email },
    ]);

    // The audit rows carry their organisation; the create's id is the same text in both, once per organisation.
    const creates = await owner(app).db.selectFrom('trainsync.provisioning_audit').select(['org', 'action_id', 'email', 'feed_path']).where('kind', '=', 'create-user').orderBy('org').execute();
    expect(creates.map((c) => [c.org, c.email])).toEqual([
      ['north', northJoiner.email],
      ['south', southJoiner.email],
    ]);
    expect(creates[0]!.feed_path).toContain('north-');
    expect(creates[1]!.feed_path).toContain('south-');
    const feeds = await owner(app).db.selectFrom('trainsync.feeds').select(['org']).orderBy('id').execute();
    expect(feeds.map((f) => f.org)).toEqual(['north', 'south']);
  });

  it('a leaver in one organisation loses access there only: the account both list keeps the other organisation\'s access', async () => {
    const northRows = rowsFromState(north.state).filter((r) => r.employee_id !== 'J001');
    const person = northRows.find((r) => r.status === 'active')!;
    // The same person (same e-mail, same GUID) is listed by both organisations' GET users.
    const inNorth = findUser(north.state, person.email)!;
    const inSouth = findUser(south.state, person.email)!;
    expect(inNorth.id).toBe(inSouth.id);
    expect(inSouth.hasAccess).toBe(true);

    const southWritesBefore = south.requests.filter((r) => r.method !== 'GET').length;
    const leaverFeed = [...northRows.map((r) => (r.employee_id === person.employee_id ? { ...r, status: 'terminated' } : r)), joiner('J001', `north.j001${ORG_EMAIL_DOMAIN}`)];
    const n = await provision('north', leaverFeed);
    expect(n.plan.counts.disable).toBe(1);
    expect(n.applied!.audit.map((r) => [r.kind, r.employeeId, r.status])).toEqual([['disable', person.employee_id, 'succeeded']]);

    expect(findUser(north.state, person.email)!.hasAccess).toBe(false);
    expect(findUser(south.state, person.email)!.hasAccess).toBe(true);
    expect(south.requests.filter((r) => r.method !== 'GET').length).toBe(southWritesBefore);
    expect((await identities('north')).get(person.employee_id)!.active).toBe(false);
    expect((await identities('south')).get(person.employee_id)!.active).toBe(true);

    // South's unchanged feed plans nothing for them: its own applied state and platform say active.
    const s = await provision('south', [...rowsFromState(south.state).filter((r) => r.employee_id !== 'J001'), joiner('J001', `south.j001${ORG_EMAIL_DOMAIN}`)]);
    expect(s.plan.actions).toEqual([]);
    expect(findUser(south.state, person.email)!.hasAccess).toBe(true);

    const disables = await owner(app).db.selectFrom('trainsync.provisioning_actions').select(['org', 'employee_id']).where('kind', '=', 'disable').execute();
    expect(disables).toEqual([{ org: 'north', employee_id: person.employee_id }]);
  });

  it("a plan the disable guard holds is its organisation's: another organisation cannot approve it", async () => {
    // North's feed lists three people: the rest would be disabled, past the limit: held, nothing applied.
    const rows = rowsFromState(north.state).filter((r) => r.status === 'active').slice(0, 3);
    // Three of a workforce is a feed cut short (the shrink guard's): said to be right, the disable limit holds it.
    expect((await provision('north', rows)).plan.refused?.reason).toBe('feed-shrink');
    const held = await provision('north', rows, 'full', { allowShrink: true });
    expect(held.plan.refused?.reason).toBe('max-disable');
    expect(held.heldPlanId).toBeDefined();
    const id = held.heldPlanId!;
    expect((await listHeldPlans(owner(app).scope('north'), { onlyHeld: true })).map((p) => [p.id, p.org])).toEqual([[id, 'north']]);
    expect(await listHeldPlans(owner(app).scope('south'), { onlyHeld: true })).toEqual([]);
    const decider = { by: 'tester', role: 'operator' };
    const confirm = { typed: held.plan.counts.disable, ask: { give: '--confirm N', shownBy: '`trainsync held`' } };
    const across = await approveHeldPlan({ ...provisionDeps(app, 'south') }, id, decider, confirm);
    // South's scoped handle does not see north's plan at all (Postgres' row security): not found, never "it is north's".
    expect(across).toEqual({ ok: false, reason: `no held plan #${id}`, code: 'not-found' });
    expect((await rejectHeldPlan(provisionDeps(app, 'south'), id, decider)).ok).toBe(false);
    expect((await rejectHeldPlan(provisionDeps(app, 'north'), id, decider)).ok).toBe(true);
    expect(north.state.users.filter((u) => u.hasAccess).length).toBeGreaterThan(3);
  });

  it('reconcile reports each organisation on its own; --org is required with two', async () => {
    // South's feed asks for an account the platform refuses (another organisation's e-mail): a pending action, south's only.
    const southRows = [...rowsFromState(south.state).filter((r) => r.employee_id !== 'J001'), joiner('J001', `south.j001${ORG_EMAIL_DOMAIN}`), joiner('J404', `j404${FOREIGN_EMAIL_DOMAIN}`)];
    const s = await provision('south', southRows);
    expect(s.applied!.audit.map((r) => [r.employeeId, r.status])).toEqual([['J404', 'failed']]);
    // North's platform accounts as a users sync would store them, plus one no employee lists.
    for (const u of north.state.users) {
      await sql`insert into training.users (org, user_id, email, first_name, last_name, role, organisation_identifier, has_access, first_seen_at, last_seen_at, updated_at)
                values ('north', ${u.id}::uuid, ${u.email}, ${u.firstName}, ${u.lastName}, ${u.role}, ${u.organisationIdentifier ?? null}, ${u.hasAccess}, now(), now(), now())`.execute(owner(app).db);
    }
    const stray = 'e6f7a1b2-0000-4000-8000-000000000001';
    await sql`insert into training.users (org, user_id, email, first_name, last_name, role, organisation_identifier, has_access, first_seen_at, last_seen_at, updated_at)
              values ('north', ${stray}::uuid, ${`stray${ORG_EMAIL_DOMAIN}`}, 'Stray', 'Account', 'USER', null, true, now(), now(), now())`.execute(owner(app).db);

    const cliEnv = { ...env, LOG_LEVEL: 'error' };
    const ambiguous = await runCli(['reconcile'], cliEnv);
    expect(ambiguous.code).toBe(2);
    expect(ambiguous.stderr).toMatch(/north, south/);

    const run = await runCli(['reconcile', '--org', 'all', '--json'], cliEnv);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const { organisations } = JSON.parse(run.stdout) as { organisations: Array<{ org: string; counts: Record<string, number>; examples: Record<string, Array<{ email: string; user_id: string | null }>> }> };
    expect(organisations.map((o) => o.org)).toEqual(['north', 'south']);
    const [n, so] = organisations as [(typeof organisations)[number], (typeof organisations)[number]];
    expect(n.counts).toMatchObject({ account_without_employee: 1, leaver_with_access: 0, pending_action: 0 });
    expect(n.examples.account_without_employee!.map((e) => e.user_id)).toEqual([stray]);
    expect(so.counts).toMatchObject({ account_without_employee: 0, pending_action: 1 });
    expect(so.examples.pending_action!.map((e) => e.email)).toEqual([`j404${FOREIGN_EMAIL_DOMAIN}`]);

    // North's reader: North's discrepancies and employees only, through the same view.
    const client = await h.database.pool.connect();
    try {
      await client.query('begin');
      await client.query(`set local role ${northReader}`);
      const seen = await client.query<{ org: string; kind: string }>('select org, kind from training.hr_reconciliation');
      expect(seen.rows.length).toBeGreaterThan(0);
      expect(new Set(seen.rows.map((r) => r.org))).toEqual(new Set(['north']));
      const employees = await client.query<{ org: string }>('select distinct org from training.employees');
      expect(employees.rows).toEqual([{ org: 'north' }]);
    } finally {
      await client.query('rollback').catch(() => undefined);
      client.release();
    }

    const one = await runCli(['reconcile', '--org', 'south'], cliEnv);
    expect(one.code).toBe(0);
    expect(one.stdout).toMatch(/pending_action\s*│\s*1\s/);
    expect(one.stdout).not.toMatch(/stray/);
    // South's accounts were never synced, North's were: said of South alone.
    expect(one.stdout).toContain('training.users has no row of south');

    const feedless = await runCli(['provision', files.write('x.csv', toCsv(southRows)), '--dry-run'], cliEnv);
    expect(feedless.code).toBe(2);
    expect(feedless.stderr).toMatch(/--org/);
  });
});

describe('HR feeds per organisation', () => {
  it("load-feed --org takes the organisation's default feed profile and touches its employees only", async () => {
    const cliEnv = { ...env, LOG_LEVEL: 'error' };
    const northBefore = await owner(app).db.selectFrom('training.employees').select(['employee_id', 'updated_at']).where('org', '=', 'north').orderBy('employee_id').execute();
    const run = await runCli(['load-feed', 'examples/semicolon-export.csv', '--org', 'south', '--mode', 'delta'], cliEnv);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('12 listed: 12 joined');
    const p2003 = await owner(app).db.selectFrom('training.employees').select(['org', 'status', 'attributes']).where('employee_id', '=', 'P2003').execute();
    expect(p2003).toEqual([{ org: 'south', status: 'inactive', attributes: expect.objectContaining({ department: 'Logistiek' }) }]);
    const northAfter = await owner(app).db.selectFrom('training.employees').select(['employee_id', 'updated_at']).where('org', '=', 'north').orderBy('employee_id').execute();
    expect(northAfter).toEqual(northBefore);

    // Several organisations and none named: refused, naming them.
    const ambiguous = await runCli(['load-feed', 'examples/semicolon-export.csv', '--mode', 'delta'], cliEnv);
    expect(ambiguous.code).toBe(2);
    expect(ambiguous.stderr).toMatch(/north, south/);
  });
});

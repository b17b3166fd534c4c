import { randomBytes, randomUUID } from 'node:crypto';
import fc from 'fast-check';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureOrgReaders } from '../src/warehouse/org-readers.ts';
import { createTestDatabase, databaseUrl, withAdmin, type TestDatabase, asLogin as asLoginTo } from './helpers/db.ts';

/**
 * A per-organisation BI reader learns nothing of another organisation, whatever SQL it
 * writes. Every table and view of schema training is taken from pg_catalog when the test
 * runs (a view added later is attacked too), and each is attacked by both organisations'
 * readers with what any login may do:
 * - a function of its own in pg_temp, cheap so the planner runs it early, that prints (or
 *   raises) every value it is shown, used in WHERE on the whole row and on each column;
 * - a cast that fails with the value in its message, for another organisation's rows only;
 * - the same cast in ORDER BY … LIMIT;
 * - a pg_temp table shadowing a catalogue relation the row-security helpers read;
 * - the planner's statistics (pg_stats).
 * Each runs under the default plan and under nested loops (which push quals into the inner
 * scans). No notice, error or row may carry a value of the other organisation: its marker
 * string, its uuids or the text of any of its rows. A reader of trainsync_reader sees both.
 */

const tag = randomBytes(3).toString('hex');
const orgs = ['north', 'south'] as const;
type Org = (typeof orgs)[number];
const readerRole = (org: Org): string => `r${tag}_${org}`;
const readerLogin = (org: Org): string => `bi${tag}_${org}`;
const allLogin = `bi${tag}_all`;
const secret = (org: Org): string => `${org}-secret-${tag}`;
const other = (org: Org): Org => (org === 'north' ? 'south' : 'north');
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;

/** The plans each attack runs under: the default, and nested loops that take quals into inner scans. */
const PLANS: ReadonlyArray<{ name: string; settings: string[] }> = [
  { name: 'default plan', settings: [] },
  { name: 'nested loops', settings: ['set enable_hashjoin = off', 'set enable_mergejoin = off', 'set enable_material = off'] },
];

interface Relation {
  name: string;
  kind: string;
  /** The column naming the organisation: org, or slug for training.organisations. */
  orgColumn: string;
  columns: string[];
  /** Each column's type, as format_type names it. */
  types: string[];
}

let t: TestDatabase;
let relations: Relation[] = [];
/** Per organisation: strings that only that organisation's rows hold. */
const markers = new Map<Org, string[]>();

function ident(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

const asLogin = <T>(login: string, fn: (client: pg.Client, notices: string[]) => Promise<T>): Promise<T> => asLoginTo(t.name, login, fn);

async function seed(org: Org): Promise<void> {
  const s = secret(org);
  const at = org === 'north' ? '2024-01-01T00:00:00Z' : '2023-03-03T03:03:03Z';
  const [leaverUser, orphanUser, assignedUser, pendingUser] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
  const [course, group, filter, answer, result] = [randomUUID(), randomUUID(), randomUUID(), randomUUID(), randomUUID()];
  const q = (text: string, values: unknown[]): Promise<unknown> => t.pool.query(text, [org, ...values]);
  const user = (id: string, email: string): Promise<unknown> =>
    q(
      `insert into training.users (org, user_id, email, first_name, last_name, role, organisation_identifier, has_access, first_seen_at, last_seen_at, updated_at)
       values ($1, $2, $3, $4, $4, $5, $6, true, $7, $7, $7)`,
      [id, email, `First ${s}`, `role ${s}`, `oid-${s}-${email}`, at],
    );
  const employee = (id: string, email: string, status: string, userId: string | null): Promise<unknown> =>
    q(
      `insert into training.employees (org, employee_id, email, first_name, last_name, status, attributes, user_id, first_seen_at, last_seen_at, updated_at)
       values ($1, $2, $3, $4, $4, $5, $6::jsonb, $7, $8, $8, $8)`,
      [id, email, `Name ${s}`, status, JSON.stringify({ department: `dept ${s}` }), userId, at],
    );
  await user(leaverUser, `leaver.${s}@example.com`);
  await user(orphanUser, `orphan.${s}@example.com`);
  await user(assignedUser, `assigned.${s}@example.com`);
  // Every kind of hr_reconciliation row: active without account, leaver with access,
  // account without employee (orphanUser), pending action (a failed one, with an identity).
  await employee(`E-new-${s}`, `new.${s}@example.com`, 'active', null);
  await employee(`E-leaver-${s}`, `leaver.${s}@example.com`, 'inactive', leaverUser);
  await employee(`E-assigned-${s}`, `assigned.${s}@example.com`, 'active', assignedUser);
  await q(
    `insert into training.employee_history (org, employee_id, valid_from, status, email, first_name, last_name, attributes)
     values ($1, $2, $3, 'active', $4, $5, $5, $6::jsonb)`,
    [`E-new-${s}`, at, `new.${s}@example.com`, `Name ${s}`, JSON.stringify({ department: `dept ${s}` })],
  );
  await q(
    `insert into trainsync.provisioning_actions (org, action_id, employee_id, email, kind, status, error_code, error_message, source, reason, finished_at)
     values ($1, $2, $3, $4, 'create-user', 'failed', $5, $6, 'feed', $7, $8)`,
    [`${s}-a1`, `E-pending-${s}`, `pending.${s}@example.com`, `CODE-${s}`, `the platform refused ${s}`, `reason ${s}`, at],
  );
  await q(
    `insert into trainsync.identities (org, employee_id, email, platform_user_id, first_name, last_name, active)
     values ($1, $2, $3, $4, $5, $5, true)`,
    [`E-pending-${s}`, `pending.${s}@example.com`, pendingUser, `Name ${s}`],
  );
  await q(`insert into training.courses (org, course_id, name, pass_rate, first_seen_at, last_seen_at, updated_at) values ($1, $2, $3, 70, $4, $4, $4)`, [course, `Course ${s}`, at]);
  await q(`insert into training.course_categories (org, course_id, category_type, category_name) values ($1, $2, 'topic', $3)`, [course, `Category ${s}`]);
  await q(
    `insert into training.results (org, result_id, user_id, course_id, is_complete, date_completed, score, maximum_score, course_type, extra, first_seen_at, last_seen_at, updated_at)
     values ($1, $2, $3, $4, true, $5, 8, 10, 'SINGLE_COURSE', $6::jsonb, $5, $5, $5)`,
    [result, assignedUser, course, at, JSON.stringify({ note: s })],
  );
  await q(`insert into training.seat_usage (org, observed_at, seats_in_use, total_seats, applicable) values ($1, $2, 5, 10, true)`, [at]);
  await q(`insert into training.groups (org, group_id, name, first_seen_at, last_seen_at, updated_at) values ($1, $2, $3, $4, $4, $4)`, [group, `Group ${s}`, at]);
  await q(`insert into training.group_members (org, group_id, user_id, employee_id, since) values ($1, $2, $3, $4, $5)`, [group, assignedUser, `E-assigned-${s}`, at]);
  await q(`insert into training.group_courses (org, group_id, course_id, course_name) values ($1, $2, $3, $4)`, [group, course, `Course ${s}`]);
  await q(`insert into training.reporting_filters (org, filter_id, name, first_seen_at, last_seen_at, updated_at) values ($1, $2, $3, $4, $4, $4)`, [filter, `Filter ${s}`, at]);
  await q(
    `insert into training.reporting_filter_answers (org, answer_id, filter_id, answer, first_seen_at, last_seen_at, updated_at) values ($1, $2, $3, $4, $5, $5, $5)`,
    [answer, filter, `Answer ${s}`, at],
  );
  await q(`insert into training.result_filter_answers (org, result_id, answer_id) values ($1, $2, $3)`, [result, answer]);
  // training.freshness: a resource with a complete run and a schedule, named after the marker.
  await q(`insert into trainsync.runs (org, resource, status, started_at, finished_at) values ($1, $2, 'succeeded', $3, $3)`, [`resource-${s}`, at]);
  await q(`insert into trainsync.sync_schedules (org, resource, pattern, every_seconds) values ($1, $2, '0 2 * * *', 86400)`, [`resource-${s}`]);
}

/** What only `org` holds: its marker, every uuid of its rows, and each of its rows' text. */
async function collectMarkers(org: Org): Promise<string[]> {
  const found = new Set<string>([secret(org)]);
  for (const rel of relations) {
    const { rows } = await t.pool.query<{ row: string }>(`select t::text as row from training.${ident(rel.name)} t where t.${ident(rel.orgColumn)} = $1`, [org]);
    for (const { row } of rows) {
      found.add(row);
      for (const uuid of row.match(UUID) ?? []) found.add(uuid);
    }
  }
  return [...found];
}

beforeAll(async () => {
  t = await createTestDatabase();
  for (const org of orgs) {
    await t.pool.query('insert into training.organisations (slug, name) values ($1, $2)', [org, `Organisation ${secret(org)}`]);
  }
  await ensureOrgReaders(t.pool, orgs.map((org) => ({ slug: org, readerRole: readerRole(org) })));
  await withAdmin(async (admin) => {
    for (const org of orgs) await admin.query(`create role ${ident(readerLogin(org))} login in role ${ident(readerRole(org))}`);
    await admin.query(`create role ${ident(allLogin)} login in role trainsync_reader`);
  });
  for (const org of orgs) await seed(org);
  // Statistics as a busy warehouse has them: the planner's choices and pg_stats rest on them.
  await t.pool.query('analyze');
  const { rows } = await t.pool.query<{ name: string; kind: string; columns: string[]; types: string[] }>(
    `select c.relname as name, c.relkind::text as kind,
       array_agg(a.attname::text order by a.attnum) as columns,
       array_agg(format_type(a.atttypid, a.atttypmod) order by a.attnum) as types
     from pg_class c
     join pg_namespace n on n.oid = c.relnamespace
     join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
     where n.nspname = 'training' and c.relkind in ('r', 'p', 'v', 'm', 'f')
     group by c.relname, c.relkind
     order by c.relname`,
  );
  relations = rows.map((row) => ({ ...row, orgColumn: row.columns.includes('org') ? 'org' : 'slug' }));
  for (const org of orgs) markers.set(org, await collectMarkers(org));
});

afterAll(async () => {
  await t?.drop();
  await withAdmin(async (admin) => {
    for (const role of [...orgs.map(readerLogin), allLogin, ...orgs.map(readerRole)]) await admin.query(`drop role if exists ${ident(role)}`);
  });
});

/** The messages that carry a value of `org`, shortened for the failure report. */
function leaking(messages: readonly string[], org: Org): string[] {
  const secrets = markers.get(org) ?? [];
  return messages.filter((m) => secrets.some((s) => m.includes(s))).map((m) => m.slice(0, 300));
}

/** The attacks on one relation by `org`'s reader: [label, sql] pairs. */
function attacks(rel: Relation, org: Org): Array<[string, string]> {
  const r = `training.${ident(rel.name)}`;
  const o = `t.${ident(rel.orgColumn)}`;
  const mine = `'${org}'`;
  const values = ['t::text', ...rel.columns.map((c) => `t.${ident(c)}::text`)];
  const list: Array<[string, string]> = [];
  for (const v of values) {
    list.push([`pg_temp.peek(${v})`, `select count(*) from ${r} t where pg_temp.peek(${v})`]);
    list.push([`pg_temp.boom(org, ${v})`, `select count(*) from ${r} t where pg_temp.boom(${o}::text, ${v})`]);
    list.push([`cast of ${v}`, `select count(*) from ${r} t where case when ${o} <> ${mine} then (${v})::int else 0 end = 0`]);
  }
  list.push(['cast in order by … limit', `select ${o} from ${r} t order by case when ${o} <> ${mine} then (t::text)::int else 0 end limit 1`]);
  list.push(['peek in a join', `select count(*) from ${r} t join training.organisations g on pg_temp.peek(t::text || g.slug)`]);
  return list;
}

describe('a per-organisation reader learns nothing of another organisation', () => {
  it('the catalogue lists every table and view, and each has rows of both organisations (a reader of trainsync_reader sees both)', async () => {
    expect(relations.map((rel) => rel.name)).toEqual(expect.arrayContaining(['freshness', 'hr_reconciliation', 'organisations', 'results', 'result_details']));
    await asLogin(allLogin, async (client) => {
      for (const rel of relations) {
        const { rows } = await client.query<{ org: string }>(`select distinct t.${ident(rel.orgColumn)} as org from training.${ident(rel.name)} t order by 1`);
        // A relation added later needs rows of both organisations in seed() for the attacks below to mean anything.
        expect(rows.map((row) => row.org), `training.${rel.name}: seed rows of both organisations in seed()`).toEqual(expect.arrayContaining(['north', 'south']));
      }
      const { rows } = await client.query<{ org: string; kind: string }>('select distinct org, kind from training.hr_reconciliation order by org, kind');
      const kinds = ['account_without_employee', 'active_without_account', 'leaver_with_access', 'pending_action'];
      expect(rows).toEqual(orgs.flatMap((org) => kinds.map((kind) => ({ org, kind }))));
    });
  });

  for (const org of orgs) {
    it(`${org}'s reader sees only ${org}'s rows in every table and view, even with pg_roles shadowed in pg_temp`, async () => {
      await asLogin(readerLogin(org), async (client) => {
        const { rows: own } = await client.query<{ oid: number }>('select oid from pg_catalog.pg_roles where rolname = $1', [readerRole(org)]);
        // sees_organisation() would find the other reader role here if pg_temp came first on its search_path.
        await client.query('create temp table pg_roles (rolname name, oid oid)');
        await client.query('create temp table organisations (slug text, reader_role text)');
        await client.query('insert into pg_temp.pg_roles values ($1, $2)', [readerRole(other(org)), own[0]?.oid]);
        await client.query('insert into pg_temp.organisations values ($1, $2)', [other(org), readerRole(org)]);
        for (const rel of relations) {
          const { rows } = await client.query<{ org: string; row: string }>(`select t.${ident(rel.orgColumn)} as org, t::text as row from training.${ident(rel.name)} t`);
          expect(rows.length, `training.${rel.name}`).toBeGreaterThan(0);
          expect([...new Set(rows.map((row) => row.org))], `training.${rel.name}`).toEqual([org]);
          expect(leaking(rows.map((row) => row.row), other(org)), `training.${rel.name}`).toEqual([]);
        }
      });
    });

    it(`${org}'s reader: no leaky pg_temp function, cast error or sort learns a value of the other organisation`, async () => {
      const leaks: string[] = [];
      await asLogin(readerLogin(org), async (client, notices) => {
        await client.query(`create function pg_temp.peek(v text) returns boolean language plpgsql cost 0.0001 as $$
          begin raise notice 'peek: %', v; return true; end $$`);
        await client.query(`create function pg_temp.boom(o text, v text) returns boolean language plpgsql cost 0.0001 as $$
          begin if o is distinct from ${client.escapeLiteral(org)} then raise exception 'boom: %', v; end if; return true; end $$`);
        for (const plan of PLANS) {
          await client.query('reset all');
          for (const setting of plan.settings) await client.query(setting);
          for (const rel of relations) {
            let peeked = 0;
            for (const [label, sql] of attacks(rel, org)) {
              notices.length = 0;
              const messages: string[] = [];
              try {
                const { rows } = await client.query(sql);
                messages.push(...rows.map((row) => JSON.stringify(row)));
              } catch (error) {
                const e = error as pg.DatabaseError;
                // Any error at all tells the reader another organisation's row exists: none may be raised.
                leaks.push(`training.${rel.name}, ${plan.name}, ${label}: raised ${e.message.slice(0, 300)}`);
                messages.push([e.message, e.detail, e.where, e.hint].filter(Boolean).join(' | '));
              }
              messages.push(...notices);
              if (label.startsWith('pg_temp.peek')) peeked += notices.length;
              for (const leak of leaking(messages, other(org))) leaks.push(`training.${rel.name}, ${plan.name}, ${label}: ${leak}`);
            }
            // The function ran on the reader's own rows: the attack was made.
            expect(peeked, `training.${rel.name}, ${plan.name}`).toBeGreaterThan(0);
          }
        }
      });
      expect(leaks).toEqual([]);
    });
  }

  it('no combination of a leaky predicate with conditions on the other organisation\'s exact values learns one of them (property)', async () => {
    // Conditions made of leakproof operators (=, is not null) are let below the barrier and the
    // policies, into index scans: combined with a leaky one, in either order, under either plan.
    const values = new Map<string, Array<{ column: string; type: string; value: string }>>();
    for (const rel of relations) {
      const { rows } = await t.pool.query<{ j: Record<string, unknown> }>(`select to_jsonb(t) as j from training.${ident(rel.name)} t where t.${ident(rel.orgColumn)} = 'south'`);
      values.set(
        rel.name,
        rows.flatMap(({ j }) =>
          rel.columns.flatMap((column, i) => {
            const v = j[column];
            return typeof v === 'string' ? [{ column, type: rel.types[i] ?? 'text', value: v }] : [];
          }),
        ),
      );
    }
    await asLogin(readerLogin('north'), async (client, notices) => {
      await client.query(`create function pg_temp.peek(v text) returns boolean language plpgsql cost 0.0001 as $$
        begin raise notice 'peek: %', v; return true; end $$`);
      await client.query(`create function pg_temp.boom(o text, v text) returns boolean language plpgsql cost 0.0001 as $$
        begin if o is distinct from 'north' then raise exception 'boom: %', v; end if; return true; end $$`);
      const relation = fc.constantFrom(...relations);
      const scenario = relation.chain((rel) =>
        fc.record({
          rel: fc.constant(rel),
          value: fc.constantFrom('t::text', ...rel.columns.map((c) => `t.${ident(c)}::text`)),
          attack: fc.constantFrom('peek', 'boom', 'cast'),
          known: fc.array(
            fc.oneof(
              fc.constant(`t.${ident(rel.orgColumn)} = 'south'`),
              fc.constantFrom(...rel.columns).map((c) => `t.${ident(c)} is not null`),
              ...((values.get(rel.name) ?? []).length > 0
                ? [fc.constantFrom(...(values.get(rel.name) ?? [])).map(({ column, type, value }) => `t.${ident(column)} = ${client.escapeLiteral(value)}::${type}`)]
                : []),
            ),
            { maxLength: 3 },
          ),
          attackFirst: fc.boolean(),
          plan: fc.constantFrom(...PLANS),
        }),
      );
      await fc.assert(
        fc.asyncProperty(scenario, async ({ rel, value, attack, known, attackFirst, plan }) => {
          const o = `t.${ident(rel.orgColumn)}`;
          const leaky =
            attack === 'peek' ? `pg_temp.peek(${value})` : attack === 'boom' ? `pg_temp.boom(${o}::text, ${value})` : `case when ${o} <> 'north' then (${value})::int else 0 end = 0`;
          const conditions = attackFirst ? [leaky, ...known] : [...known, leaky];
          const sql = `select count(*) from training.${ident(rel.name)} t where ${conditions.join(' and ')}`;
          await client.query('reset all');
          for (const setting of plan.settings) await client.query(setting);
          notices.length = 0;
          const messages: string[] = [];
          let raised: string | undefined;
          try {
            const { rows } = await client.query(sql);
            messages.push(...rows.map((row) => JSON.stringify(row)));
          } catch (error) {
            const e = error as pg.DatabaseError;
            raised = e.message.slice(0, 300);
            messages.push([e.message, e.detail, e.where].filter(Boolean).join(' | '));
          }
          messages.push(...notices);
          // fast-check reports the smallest failing query with these.
          expect({ sql, plan: plan.name, raised, leaks: leaking(messages, 'south') }).toEqual({ sql, plan: plan.name, raised: undefined, leaks: [] });
        }),
        { numRuns: 300 },
      );
    });
  });

  it("the planner's statistics show a per-organisation reader nothing of row-secured tables", async () => {
    await asLogin(readerLogin('north'), async (client) => {
      const { rows } = await client.query<{ row: string }>(`select s::text as row from pg_stats s where schemaname = 'training'`);
      expect(leaking(rows.map((row) => row.row), 'south')).toEqual([]);
      const ext = await client.query<{ row: string }>(`select s::text as row from pg_stats_ext s where schemaname = 'training'`);
      expect(leaking(ext.rows.map((row) => row.row), 'south')).toEqual([]);
    });
  });

  it('every view of schema training runs with its reader\'s rights or is a security barrier, and no function outside pg_catalog is leakproof', async () => {
    const { rows } = await t.pool.query<{ name: string; options: string[] | null }>(
      `select c.relname as name, c.reloptions as options from pg_class c join pg_namespace n on n.oid = c.relnamespace
       where n.nspname = 'training' and c.relkind = 'v' order by 1`,
    );
    expect(rows.length).toBeGreaterThan(0);
    for (const { name, options } of rows) {
      expect(options ?? [], `training.${name}: declare it security_invoker = true, or security_barrier = true with its own organisation filter`).toEqual(
        expect.arrayContaining([expect.stringMatching(/^(security_invoker|security_barrier)=(true|on)$/)]),
      );
    }
    // A leakproof function is let below a barrier (only a superuser can declare one): none but Postgres's own.
    const leakproof = await t.pool.query<{ name: string }>(`select p.oid::regprocedure::text as name from pg_proc p where p.proleakproof and p.pronamespace <> 'pg_catalog'::regnamespace`);
    expect(leakproof.rows).toEqual([]);
  });

  it('every function of schema training pins its search_path with pg_temp last, so a reader cannot shadow what it reads', async () => {
    const { rows } = await t.pool.query<{ name: string; config: string[] | null }>(
      `select p.oid::regprocedure::text as name, p.proconfig as config
       from pg_proc p join pg_namespace n on n.oid = p.pronamespace where n.nspname = 'training' order by 1`,
    );
    expect(rows.length).toBeGreaterThan(0);
    for (const { name, config } of rows) {
      const path = (config ?? []).find((c) => c.startsWith('search_path='));
      expect(path, name).toMatch(/^search_path=.*pg_temp$/);
    }
  });
});

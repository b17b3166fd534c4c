import { stringify } from 'csv-stringify/sync';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { csvChunks, csvSafeCell } from '../src/lib/csv.ts';
import { JSON_ENTRIES, JSON_ITEMS, jsonChunks } from '../src/lib/json-stream.ts';
import { ChunkedColumn, uint32Column } from '../src/lib/typed-column.ts';
import { DuplicateKeys } from '../src/provisioning/feed/duplicate-keys.ts';
import { FeedRows } from '../src/provisioning/feed/rows.ts';
import type { FeedRole, FeedRow } from '../src/provisioning/feed/types.ts';
import { actionId } from '../src/provisioning/plan/action-id.ts';
import { ACTIVE_NO, ACTIVE_YES, MEMBER_NO, MEMBER_YES, PlanActions, type ActionLayout } from '../src/provisioning/plan/plan-actions.ts';
import { planProvisioning } from '../src/provisioning/plan/plan.ts';
import { ACTION_KINDS, type ActionState, type AppliedEmployee, type PlatformAccount, type PlatformView } from '../src/provisioning/plan/types.ts';

/**
 * The columns a large feed and its plan are held in (feed/rows.ts, plan/plan-actions.ts,
 * lib/typed-column.ts, feed/duplicate-keys.ts) and the JSON and CSV written a piece at a
 * time (lib/json-stream.ts, lib/csv.ts): each against the plain structure it replaces.
 */

const GUIDS = ['aaaaaaaa-0000-0000-0000-000000000001', 'bbbbbbbb-0000-0000-0000-000000000002', 'cccccccc-0000-0000-0000-000000000003'];

const row = (employeeId: string, line: number, over: Partial<FeedRow> = {}): FeedRow => ({
  line,
  employeeId,
  email: `${employeeId.toLowerCase()}@example.com`,
  emailDisplay: `${employeeId.toLowerCase()}@example.com`,
  firstName: 'F',
  lastName: 'L',
  status: 'active',
  groups: [],
  role: 'USER',
  organisationIdentifier: employeeId,
  ...over,
});

const person = fc.record({
  // Array-index ids ("0", "17") come first among an object's keys: the order JSON shows.
  id: fc.oneof(fc.constantFrom('E1', '7', '0', '42', '__proto__', 'É', '01'), fc.string({ minLength: 1, maxLength: 5 })),
  listed: fc.boolean(),
  known: fc.boolean(),
  active: fc.boolean(),
  wasActive: fc.boolean(),
  groups: fc.uniqueArray(fc.constantFrom(...GUIDS), { maxLength: 3 }),
  knownGroups: fc.uniqueArray(fc.constantFrom(...GUIDS), { maxLength: 3 }),
  mixedCase: fc.boolean(),
  orgId: fc.option(fc.string({ maxLength: 4 }), { nil: undefined }),
  platformUserId: fc.option(fc.constantFrom(...GUIDS), { nil: undefined }),
  deleted: fc.boolean(),
});

type Person = typeof person extends fc.Arbitrary<infer T> ? T : never;

function planOf(people: Person[], withView: boolean, reassertGroups = false) {
  const rows: FeedRow[] = people
    .filter((p) => p.listed)
    .map((p, i) => {
      const email = `u${i}@example.com`;
      return row(p.id, i + 2, { email, emailDisplay: p.mixedCase ? `U${i}@Example.com` : email, status: p.active ? 'active' : 'inactive', groups: p.groups, organisationIdentifier: p.orgId ?? p.id, ...(p.platformUserId ? { platformUserId: p.platformUserId } : {}) });
    });
  const applied: AppliedEmployee[] = people
    .filter((p) => p.known)
    .map((p, i) => ({ employeeId: p.id, email: `k${i}@example.com`, platformUserId: `ffffffff-0000-0000-0000-00000000000${i % 10}`, firstName: 'F', lastName: 'L', active: p.wasActive, groups: p.knownGroups, version: i + 1 }));
  const accounts: PlatformAccount[] = people.flatMap((p, i) => (p.known && !p.deleted ? [{ id: `ffffffff-0000-0000-0000-00000000000${i % 10}`, email: `k${i}@example.com`, hasAccess: p.active }] : []));
  const view: PlatformView | undefined = withView
    ? { byId: new Map(accounts.map((a) => [a.id, a])), byEmail: new Map(accounts.map((a) => [a.email, a])), complete: true, source: 'api', asOf: new Date('2026-01-01T00:00:00Z') }
    : undefined;
  return planProvisioning({ rows, invalidEmployeeIds: new Set(), invalidEmails: new Set(), applied, mode: 'full', options: { force: true, reassertGroups }, file: 'hr.csv', ...(view ? { platform: view } : {}) });
}

describe("a plan's actions held by column", () => {
  it('read back with their fields in the order each planner step wrote them', () => {
    const view: PlatformView = { byId: new Map(), byEmail: new Map(), complete: true, source: 'api', asOf: new Date('2026-01-01T00:00:00Z') };
    const known: AppliedEmployee = { employeeId: 'K1', email: 'k1@example.com', platformUserId: GUIDS[2]!, firstName: 'F', lastName: 'L', active: true, groups: [], version: 4 };
    const gone = planProvisioning({ rows: [row('K1', 2, { groups: [GUIDS[0]!] })], invalidEmployeeIds: new Set(), invalidEmails: new Set(), applied: [known], mode: 'full', options: { force: true }, platform: view });
    // An account deleted outside trainsync: created again, the person's fields first.
    expect(gone.actions.toArray().map((a) => Object.keys(a))).toEqual([
      ['id', 'employeeId', 'email', 'platformUserId', 'baseVersion', 'kind', 'seq', 'before', 'after', 'repair'],
      ['id', 'employeeId', 'email', 'platformUserId', 'baseVersion', 'kind', 'groupId', 'seq', 'before', 'after', 'repair'],
    ]);
    const mixed = planProvisioning({
      rows: [row('J1', 2, { groups: [GUIDS[0]!] }), row('K1', 3, { status: 'inactive' })],
      invalidEmployeeIds: new Set(),
      invalidEmails: new Set(),
      applied: [known, { ...known, employeeId: 'L1', email: 'l1@example.com', platformUserId: null }],
      mode: 'full',
      options: { force: true },
    });
    expect(mixed.actions.toArray().map((a) => [a.kind, Object.keys(a)])).toEqual([
      ['create-user', ['id', 'kind', 'employeeId', 'email', 'platformUserId', 'seq', 'baseVersion', 'before', 'after']],
      ['add-to-group', ['id', 'kind', 'employeeId', 'email', 'groupId', 'platformUserId', 'seq', 'baseVersion', 'before', 'after']],
      ['disable', ['id', 'employeeId', 'email', 'platformUserId', 'baseVersion', 'kind', 'seq', 'before', 'after']],
      ['disable', ['id', 'kind', 'employeeId', 'email', 'platformUserId', 'seq', 'baseVersion', 'before', 'after']],
    ]);
    expect(mixed.actions.at(0)!.after).toEqual({ email: 'j1@example.com', firstName: 'F', lastName: 'L', role: 'USER', organisationIdentifier: 'J1' });
  });

  it('written a piece at a time, are the JSON JSON.stringify writes, byEmployee included (property)', () => {
    fc.assert(
      fc.property(fc.uniqueArray(person, { selector: (p) => p.id, maxLength: 10 }), fc.boolean(), fc.boolean(), (people, withView, reassert) => {
        const plan = planOf(people, withView, reassert);
        expect([...jsonChunks(plan, 2)].join('')).toBe(JSON.stringify(plan, null, 2));
        expect([...jsonChunks({ plan, n: 1 }, 0)].join('')).toBe(JSON.stringify({ plan, n: 1 }));
        expect(plan.byEmployee.keys()).toEqual(Object.keys(plan.byEmployee.toJSON()));
      }),
      { numRuns: 200 },
    );
  });
});

describe('an action held by column', () => {
  const state = fc.constantFrom<ActionState | null>(null, MEMBER_NO, MEMBER_YES, ACTIVE_YES, ACTIVE_NO, { member: false }, { active: true }, { email: 'x@y.z' }, { active: true, member: false });
  const created = fc.record({ email: fc.constantFrom('e@x.y', 'E@X.y'), firstName: fc.string({ maxLength: 3 }), lastName: fc.string({ maxLength: 3 }), role: fc.constantFrom<FeedRole>('USER', 'ADMIN'), organisationIdentifier: fc.constantFrom('E1', 'ORG') });
  const fields = fc.record(
    {
      kind: fc.constantFrom(...ACTION_KINDS),
      employeeId: fc.constantFrom('E1', 'E2'),
      email: fc.constantFrom('e@x.y', 'f@x.y'),
      groupId: fc.constantFrom(...GUIDS),
      platformUserId: fc.constantFrom(null, GUIDS[0]!),
      seq: fc.constantFrom(0, 1, 2),
      baseVersion: fc.constantFrom(0, 1, 7),
      before: state,
      after: fc.oneof(state.filter((s): s is ActionState => s !== null), created),
      repair: fc.string({ maxLength: 4 }),
    },
    { requiredKeys: ['kind', 'employeeId', 'email', 'platformUserId', 'seq', 'baseVersion', 'before', 'after'] },
  );

  it('reads back as what was added, with its id, whatever the fields (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fields, fc.constantFrom<ActionLayout>('kind-first', 'person-first')), { maxLength: 30 }), (added) => {
        const actions = new PlanActions();
        for (const [f, layout] of added) actions.add(f, layout);
        expect(actions.length).toBe(added.length);
        expect(actions.toArray()).toEqual(added.map(([f]) => ({ id: actionId(f), ...f })));
        added.forEach(([f], i) => {
          expect(actions.kindAt(i)).toBe(f.kind);
          expect(actions.employeeIdAt(i)).toBe(f.employeeId);
          expect(actions.hasRepairAt(i)).toBe(f.repair !== undefined);
        });
      }),
      { numRuns: 300 },
    );
  });
});

describe('JSON written a piece at a time', () => {
  it('is JSON.stringify of any JSON value, streamed arrays and objects inside it too (property)', () => {
    const streamed = (items: unknown[], entries: [string, unknown][]) => ({
      items: { [JSON_ITEMS]: () => items, toJSON: () => items },
      entries: { [JSON_ENTRIES]: () => entries, toJSON: () => Object.fromEntries(entries) },
    });
    fc.assert(
      fc.property(fc.jsonValue(), fc.array(fc.jsonValue(), { maxLength: 4 }), fc.uniqueArray(fc.tuple(fc.string(), fc.jsonValue()), { selector: ([k]) => k, maxLength: 4 }), fc.constantFrom(0, 2, 4), (value, items, entries, indent) => {
        // Entries in the order the object's keys take (array indexes first), as the view must give them.
        const ordered = Object.keys(Object.fromEntries(entries)).map((k) => entries.find(([key]) => key === k)!);
        const doc = { value, nested: { ...streamed(items, ordered), undefinedIsLeftOut: undefined }, list: [value] };
        expect([...jsonChunks(doc, indent)].join('')).toBe(JSON.stringify(doc, null, indent));
        expect([...jsonChunks(value, indent)].join('')).toBe(JSON.stringify(value, null, indent));
      }),
      { numRuns: 300 },
    );
  });
});

describe('CSV written a hundred rows at a time', () => {
  it('joins into the text of one stringify over every row', () => {
    const rows = Array.from({ length: 2_345 }, (_, i) => [`=${i}`, i, i % 3 === 0 ? null : { a: i }, 'x,"y"\n']);
    const whole = stringify([['a', 'b', 'c', 'd'], ...rows].map((r) => r.map((v) => csvSafeCell(v === null ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v)))), { quoted_string: true, eof: true });
    expect([...csvChunks(['a', 'b', 'c', 'd'], rows)].join('')).toBe(whole);
  });
});

describe('columns', () => {
  it('a chunked column and a typed column hold what an array holds, through truncation (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.option(fc.nat(), { nil: undefined }), { maxLength: 10_000 }), fc.nat(), (values, cut) => {
        const chunked = new ChunkedColumn<number | undefined>();
        const typed = uint32Column();
        for (const v of values) {
          chunked.push(v);
          typed.push(v ?? 0);
        }
        const keep = values.length === 0 ? 0 : cut % (values.length + 1);
        chunked.truncate(keep);
        typed.truncate(keep);
        expect(chunked.length).toBe(keep);
        expect(Array.from({ length: keep }, (_, i) => chunked.at(i))).toEqual(values.slice(0, keep));
        expect(Array.from({ length: keep }, (_, i) => typed.at(i))).toEqual(values.slice(0, keep).map((v) => v ?? 0));
        chunked.push(7);
        expect(chunked.at(keep)).toBe(7);
      }),
      { numRuns: 100 },
    );
  });

  it("a feed's rows held by column read back as the rows they were, and keep their order when some leave", () => {
    const rows = [
      row('E1', 2, { attributes: { dept: 'x' } }),
      row('E2', 3, { emailDisplay: 'E2@Example.com', organisationIdentifier: 'ORG-2', platformUserId: GUIDS[0]!, status: 'inactive', role: 'ADMIN', firstName: null }),
      row('E3', 4, { groups: [GUIDS[1]!] }),
    ];
    const held = FeedRows.of(rows);
    expect(JSON.stringify(held)).toBe(JSON.stringify(rows));
    expect(held.filter((r) => r.status === 'active').map((r) => r.employeeId)).toEqual(['E1', 'E3']);
    held.retain((i) => held.lineAt(i) !== 3);
    expect(JSON.stringify([...held])).toBe(JSON.stringify([rows[0], rows[2]]));
    expect(held.at(2)).toBeUndefined();
  });

  it('the duplicate index finds the keys a Map finds, with their lines in order, held rows\' keys read from the rows (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom('a', 'b', 'É', 'a@x', '', 'c'.repeat(40)), { maxLength: 3_000 }), fc.array(fc.string({ maxLength: 3 }), { maxLength: 2_000 }), (few, many) => {
        const keys = [...few, ...many];
        // Every third key is a held row's, read from the rows (as the reader's are); the rest are its own.
        const held: string[] = [];
        const index = new DuplicateKeys((row) => held[row]!);
        const model = new Map<string, number[]>();
        keys.forEach((key, line) => {
          if (line % 3 === 0) {
            held.push(key);
            index.noteRow(held.length - 1, key, line + 1);
          } else index.note(key, line + 1);
          model.set(key, [...(model.get(key) ?? []), line + 1]);
        });
        expect(index.size).toBe(model.size);
        expect([...index.duplicates()]).toEqual([...model].filter(([, lines]) => lines.length > 1));
      }),
      { numRuns: 100 },
    );
  });
});

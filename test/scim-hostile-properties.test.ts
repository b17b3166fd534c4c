import { owner } from './helpers/owner.ts';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findUser, ORG_EMAIL_DOMAIN } from '../src/simulator/index.ts';
import { createScimHarness, type ScimHarness } from './helpers/scim-harness.ts';

/**
 * Arbitrary and hostile User bodies and PATCH operations against the real SCIM server, with
 * the real batches, sweep, provisioning worker and the simulator: objects where text belongs,
 * arrays, NUL, lone surrogates, deep nesting, huge strings, unknown attributes, wrong schemas;
 * each sent alone and beside valid creates, all at once. Never a 5xx; every User answered 2xx
 * is planned or quarantined (never left pending); every valid User beside them reaches the
 * platform. Runs are bounded (a few dozen, seeded per run by fast-check) to stay well under a
 * minute on a busy machine.
 */

const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const ENTERPRISE = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
const PATCH = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const RUNS = 20;
let h: ScimHarness;
let serial = 0;

beforeAll(async () => {
  // Seats for every User the runs create: a full platform is another test's finding.
  h = await createScimHarness({ simulator: { seed: 53, sizes: { users: 5, groups: 2, courses: 1, results: 1 }, totalSeats: 100_000 } });
});
afterAll(async () => {
  await h?.close();
});

const nextEmail = (kind: string): string => `${kind}.${process.pid}.${(serial += 1)}${ORG_EMAIL_DOMAIN}`;
const valid = (userName: string) => ({ schemas: [USER], userName, name: { givenName: 'Prop', familyName: 'Erty' }, active: true });

/** Values a field may hold, the hostile ones most of all. */
function deepNest(depth: number): unknown {
  let v: unknown = 'leaf';
  for (let i = 0; i < depth; i += 1) v = i % 2 === 0 ? { a: v } : [v];
  return v;
}
const hostileText = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.constantFrom('a\u0000b', '\u0000', 'x\ud800', '\udfffy', '\ud83d', 'ok\ud83d\ude00ok', ' ', 'True', 'FALSE', '1e20'),
  fc.integer({ min: 1000, max: 70_000 }).map((n) => 'h'.repeat(n)),
);
const hostile: fc.Arbitrary<unknown> = fc.oneof(
  hostileText,
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.oneof(fc.string({ maxLength: 8 }), fc.integer()), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 8 }), fc.oneof(fc.string({ maxLength: 8 }), fc.integer()), { maxKeys: 3 }),
  fc.integer({ min: 10, max: 40 }).map(deepNest),
  fc.jsonValue({ maxDepth: 3 }),
);
/** A plausible value half the time, a hostile one otherwise. */
const either = <T>(plausible: fc.Arbitrary<T>): fc.Arbitrary<unknown> => fc.oneof(plausible, hostile);

const userBody: fc.Arbitrary<Record<string, unknown>> = fc
  .record(
    {
      schemas: either(fc.constantFrom([USER], [USER, ENTERPRISE], ['urn:wrong:schema'], [])),
      userName: either(fc.constant('EMAIL')),
      name: either(fc.record({ givenName: either(fc.constant('Ann')), familyName: either(fc.constant('Lee')) }, { requiredKeys: [] })),
      active: either(fc.constantFrom(true, false, 'True', 'false')),
      title: either(fc.constant('Engineer')),
      externalId: either(fc.constant('EXT')),
      displayName: hostile,
      emails: either(fc.constant([{ value: 'EMAIL', type: 'work', primary: true }])),
      [ENTERPRISE]: either(
        fc.record({ department: either(fc.constant('Sales')), costCenter: either(fc.constant('C1')), manager: either(fc.constant({ value: 'M1' })), employeeNumber: either(fc.constant('N1')) }, { requiredKeys: [] }),
      ),
      id: hostile,
      meta: hostile,
      groups: hostile,
      unknownAttribute: hostile,
    },
    { requiredKeys: [] },
  )
  .map((body) => {
    // Distinct e-mails where the body asked for one: creates do not merely collide (a 409 is no finding).
    const email = nextEmail('prop');
    const text = JSON.stringify(body).replaceAll('"EMAIL"', JSON.stringify(email)).replaceAll('"EXT"', JSON.stringify(`EXT-${serial}`)).replaceAll('"N1"', JSON.stringify(`N-${serial}`));
    return JSON.parse(text) as Record<string, unknown>;
  });

const PATHS = ['title', 'name.givenName', 'name', 'active', 'userName', 'externalId', 'emails', 'emails[type eq "work"].value', `${ENTERPRISE}:department`, `${ENTERPRISE}:manager`, `${ENTERPRISE}:employeeNumber`, 'displayName', 'nickName', 'bogus', 'emails[', ''];
const operation = fc.record(
  {
    op: either(fc.constantFrom('add', 'replace', 'remove', 'Replace', 'Add')),
    path: either(fc.constantFrom(...PATHS)),
    value: hostile,
  },
  { requiredKeys: ['op'] },
);
const patchBody: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ schemas: either(fc.constant([PATCH])), Operations: fc.array(operation, { minLength: 1, maxLength: 3 }) }) },
  { weight: 1, arbitrary: hostile },
);

/** Users answered 2xx: each must end planned (not pending) or quarantined, never pending for good. */
const answered = new Set<string>();
/** Valid Users sent beside the hostile ones: each must reach the platform. */
const validEmails: string[] = [];

async function checkSettled(): Promise<void> {
  await h.settled();
  const rows = await owner(h.app).db.selectFrom('trainsync.scim_users').select(['scim_id', 'pending', 'quarantined_at']).where('scim_id', 'in', [...answered]).execute();
  expect(rows.filter((r) => r.pending)).toEqual([]);
  for (const email of validEmails) {
    if (findUser(h.sim.state, email) !== undefined) continue;
    // What became of it, for the failure's message.
    const actions = await owner(h.app).db.selectFrom('trainsync.provisioning_actions').select(['kind', 'status', 'error_message']).where('email', '=', email).execute();
    const users = await owner(h.app).db.selectFrom('trainsync.scim_users').select(['pending', 'quarantine_reason']).where('user_name', '=', email).execute();
    expect.fail(`${email} is not on the platform: ${JSON.stringify({ actions, users })}`);
  }
}

describe('hostile SCIM input (fast-check, against the real server, worker and simulator)', () => {
  it('arbitrary User bodies, alone and beside valid creates: never a 5xx, every 2xx planned or quarantined, every valid one on the platform', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(userBody, { minLength: 1, maxLength: 3 }), fc.boolean(), async (bodies, alone) => {
        if (alone) {
          // One hostile body on its own: the same rules.
          const a = await h.request('POST', '/Users', bodies[0]);
          expect(a.status, JSON.stringify(a.json)?.slice(0, 300)).toBeLessThan(500);
          if (a.status === 201) answered.add(a.json.id);
          return;
        }
        const beside = [nextEmail('beside'), nextEmail('beside')];
        validEmails.push(...beside);
        const answers = await Promise.all([...bodies.map((b) => h.request('POST', '/Users', b)), ...beside.map((e) => h.request('POST', '/Users', valid(e)))]);
        for (const a of answers) {
          expect(a.status, JSON.stringify(a.json)?.slice(0, 300)).toBeLessThan(500);
          if (a.status === 201) answered.add(a.json.id);
        }
        // The valid ones: always created.
        expect(answers.slice(bodies.length).map((a) => a.status)).toEqual([201, 201]);
        // A 4xx is in the SCIM error format.
        for (const a of answers) if (a.status >= 400) expect(a.json.schemas, JSON.stringify(a.json)).toEqual(['urn:ietf:params:scim:api:messages:2.0:Error']);
      }),
      { numRuns: RUNS },
    );
    await checkSettled();
  });

  it('arbitrary PATCH operations on live Users, beside valid creates: never a 5xx, every 2xx planned or quarantined', async () => {
    const targets: string[] = [];
    for (let i = 0; i < 4; i += 1) {
      const created = await h.request('POST', '/Users', { ...valid(nextEmail('target')), title: 'Clerk', [ENTERPRISE]: { department: 'Ops' } });
      expect(created.status).toBe(201);
      targets.push(created.json.id);
      answered.add(created.json.id);
    }
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(fc.nat(targets.length - 1), patchBody), { minLength: 1, maxLength: 3 }), async (patches) => {
        const beside = nextEmail('beside');
        validEmails.push(beside);
        const answers = await Promise.all([...patches.map(([t, body]) => h.request('PATCH', `/Users/${targets[t]}`, body)), h.request('POST', '/Users', valid(beside))]);
        for (const a of answers) expect(a.status, JSON.stringify(a.json)?.slice(0, 300)).toBeLessThan(500);
        expect(answers.at(-1)!.status).toBe(201);
        answered.add(answers.at(-1)!.json.id);
      }),
      { numRuns: RUNS },
    );
    await checkSettled();
    // The targets still read back as Users the mapping can read: a GET of each answers 200.
    for (const id of targets) expect((await h.request('GET', `/Users/${id}`)).status).toBe(200);
  });
});

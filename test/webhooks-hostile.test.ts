import { randomBytes, randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWebhookHarness, type WebhookHarness } from './helpers/webhook-harness.ts';

/**
 * The receiver against hostile senders: a flood of forged deliveries (no row each, only
 * counts), signed events the database cannot store (a 4xx, never a 503 the platform
 * retries for days), and arbitrary bodies, signatures and event ids beside a good event
 * (never a 5xx; the good one is stored whatever its neighbour is). One organisation
 * configured: an event without organisationId is accepted (see docs/security.md).
 */

let h: WebhookHarness;

beforeAll(async () => {
  h = await createWebhookHarness({ env: { TRAINSYNC_WEBHOOK_MAX_BODY_BYTES: '16384' } });
  // The organisation's GUID is learned from this first good event; later ones must name it.
  const first = good();
  expect((await h.post(first.body, { 'Platform-Signature': h.sign(first.body) })).status).toBe(200);
});
afterAll(async () => {
  await h?.close();
});

function good(): { eventId: string; body: string } {
  const eventId = randomUUID();
  return { eventId, body: JSON.stringify({ eventId, eventType: 'COURSE_COMPLETE', organisationId: h.sim.state.organisationId, data: { resultId: randomUUID() } }) };
}

const envelope = (fields: Record<string, unknown>): string =>
  JSON.stringify({ eventId: randomUUID(), eventType: 'COURSE_COMPLETE', organisationId: h.sim.state.organisationId, data: { resultId: randomUUID() }, ...fields });

async function storedCount(eventId: string): Promise<number> {
  const { rows } = await h.database.pool.query<{ n: number }>('select count(*)::int as n from trainsync.webhook_events where event_id = $1', [eventId.trim().toLowerCase()]);
  return rows[0]!.n;
}

const refusalRows = async (): Promise<number> => (await h.database.pool.query<{ n: number }>('select count(*)::int as n from trainsync.webhook_refusals')).rows[0]!.n;

async function counts(): Promise<{ rows: number; refusals: number }> {
  await h.service.flushRefusals();
  const { rows } = await h.database.pool.query<{ rows: number; refusals: number }>('select count(*)::int as rows, coalesce(sum(refusals), 0)::int as refusals from trainsync.webhook_refusal_counts');
  return rows[0]!;
}

async function failures(): Promise<number> {
  const text = await h.app.metrics.registry.metrics();
  return [...text.matchAll(/trainsync_webhook_signature_failures_total\{org="default",reason="\w+"\} (\d+)/g)].reduce((n, m) => n + Number(m[1]), 0);
}

describe('forged deliveries', () => {
  it('a flood of 600 adds no row each: the metric counts every one, the database a sum per minute and reason', async () => {
    const rowsBefore = await refusalRows();
    const countsBefore = await counts();
    const failuresBefore = await failures();
    const wrongKey = randomBytes(32).toString('base64');
    const statuses: number[] = [];
    for (let batch = 0; batch < 12; batch += 1) {
      const answers = await Promise.all(
        Array.from({ length: 50 }, (_, i) => {
          const { body } = good();
          return h.post(body, i % 2 === 0 ? {} : { 'Platform-Signature': h.sign(body, 'base64', wrongKey) });
        }),
      );
      statuses.push(...answers.map((a) => a.status));
    }
    expect(new Set(statuses)).toEqual(new Set([401]));
    expect(await refusalRows()).toBe(rowsBefore);
    expect(await failures()).toBe(failuresBefore + 600);
    const after = await counts();
    expect(after.refusals - countsBefore.refusals).toBe(600);
    // Two reasons, and the flood may straddle a minute's end: four rows at most.
    expect(after.rows - countsBefore.rows).toBeLessThanOrEqual(4);
  });
});

describe('signed events the database cannot store', () => {
  it('answers 400 to an eventId or eventType holding a NUL or another control character, and stores nothing', async () => {
    for (const fields of [{ eventId: `ev\u0000${randomUUID()}` }, { eventId: `\u001b[2J${randomUUID()}` }, { eventId: `${randomUUID()}\u0085` }, { eventType: 'COURSE_\u0000COMPLETE' }]) {
      const body = envelope(fields);
      const answer = await h.post(body, { 'Platform-Signature': h.sign(body) });
      expect(answer.status, JSON.stringify(fields)).toBe(400);
      expect(answer.json).toMatchObject({ error: expect.stringContaining('control characters') });
    }
  });

  it('answers 422 (not 503) to a \\u0000 or an unpaired surrogate elsewhere in the envelope, and the next good event is stored', async () => {
    for (const data of [{ resultId: randomUUID(), note: 'a\u0000b' }, { resultId: randomUUID(), note: '\ud800' }, { resultId: randomUUID(), ['k\u0000']: 1 }]) {
      const eventId = randomUUID();
      const body = envelope({ eventId, data });
      const answer = await h.post(body, { 'Platform-Signature': h.sign(body) });
      expect(answer.status, JSON.stringify(data)).toBe(422);
      expect(answer.json).toMatchObject({ error: expect.stringContaining('cannot be stored') });
      expect(await storedCount(eventId)).toBe(0);
    }
    const next = good();
    expect((await h.post(next.body, { 'Platform-Signature': h.sign(next.body) })).status).toBe(200);
    expect(await storedCount(next.eventId)).toBe(1);
  });

  it('accepts an event without organisationId while one organisation is configured', async () => {
    const eventId = randomUUID();
    const body = envelope({ eventId, organisationId: null });
    expect((await h.post(body, { 'Platform-Signature': h.sign(body) })).status).toBe(200);
    expect(await storedCount(eventId)).toBe(1);
  });
});

/** Strings a hostile sender would try: NUL and other controls, lone surrogates, huge, empty, SQL-ish. */
const hostileString = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom('', ' ', '\u0000', '\ud800', '\udfff', '\u001b[2J', "'; drop table x; --", '\\u0000', 'TEST_EVENT', 'COURSE_COMPLETE', '%00', '\u2028', 'x'.repeat(300)),
);
const hostileValue = fc.oneof(hostileString, fc.jsonValue({ maxDepth: 2 }), fc.constant(null), fc.integer(), fc.double());

/** A body: a hostile envelope, arbitrary JSON, or arbitrary bytes. */
const hostileBody = fc.oneof(
  fc.record(
    { eventId: hostileValue, eventType: fc.oneof(hostileValue, fc.constantFrom('COURSE_COMPLETE', 'MULTI_COURSE_COMPLETE', 'TEST_EVENT')), organisationId: hostileValue, sent: hostileValue, data: hostileValue },
    { requiredKeys: [] },
  ).map((o) => JSON.stringify(o)),
  fc.jsonValue().map((v) => JSON.stringify(v) ?? 'null'),
  fc.string({ unit: 'binary', maxLength: 200 }),
  fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b).toString('latin1')),
);

type SignatureMode = 'valid' | 'none' | 'garbage' | 'other-key' | 'other-body';
const signatureMode = fc.constantFrom<SignatureMode>('valid', 'none', 'garbage', 'other-key', 'other-body');

function headersFor(body: string, mode: SignatureMode, garbage: string): Record<string, string> {
  switch (mode) {
    case 'valid':
      return { 'Platform-Signature': h.sign(body) };
    case 'none':
      return {};
    case 'garbage':
      // A header value cannot hold CR, LF or NUL: fetch would refuse to send it.
      return { 'Platform-Signature': garbage.replace(/[\u0000-\u001f\u007f-\uffff]/g, '') || 'x' };
    case 'other-key':
      return { 'Platform-Signature': h.sign(body, 'hex', randomBytes(32).toString('base64')) };
    case 'other-body':
      return { 'Platform-Signature': h.sign(`${body} `) };
  }
}

describe('arbitrary bodies, signatures and event ids (property)', () => {
  it('never a 5xx; a forged one adds no row; a good event sent beside it is stored', async () => {
    const rowsBefore = await refusalRows();
    const countsBefore = await counts();
    let forbidden = 0;
    let forged = 0;
    await fc.assert(
      fc.asyncProperty(hostileBody, signatureMode, fc.string({ maxLength: 80 }), async (body, mode, garbage) => {
        const beside = good();
        const [bad, ok] = await Promise.all([h.post(body, headersFor(body, mode, garbage)), h.post(beside.body, { 'Platform-Signature': h.sign(beside.body) })]);
        expect(bad.status, `${mode} ${JSON.stringify(body).slice(0, 200)}`).toBeLessThan(500);
        expect(ok.status).toBe(200);
        expect(await storedCount(beside.eventId)).toBe(1);
        if (mode !== 'valid') expect([200, 401]).toContain(bad.status);
        if (mode !== 'valid' && bad.status === 401) forged += 1;
        if (bad.status === 403) forbidden += 1;
      }),
      { numRuns: 120 },
    );
    // Rows only for signed refusals (403); the forged ones are in the per-minute sums.
    expect(await refusalRows()).toBe(rowsBefore + forbidden);
    expect((await counts()).refusals - countsBefore.refusals).toBe(forged);
  });
});

import { owner } from './helpers/owner.ts';
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { WEBHOOK_QUEUE } from '../src/queue/names.ts';
import { pruneRefusals, REFUSALS_KEPT } from '../src/webhooks/refusals.ts';
import { createWebhookHarness, type WebhookHarness } from './helpers/webhook-harness.ts';

/**
 * The receiver alone (no worker takes the queued jobs, so what it stored and queued
 * stays visible): signatures, TEST_EVENT, duplicates, unknown types, the body limit,
 * and the simulator's signed deliveries and retries.
 */

const MAX_BODY = 4_096;
let h: WebhookHarness;

beforeAll(async () => {
  h = await createWebhookHarness({ env: { TRAINSYNC_WEBHOOK_MAX_BODY_BYTES: String(MAX_BODY) }, simulator: { webhooks: { maxAttempts: 3, retryBaseMs: 20 } } });
});
afterAll(async () => {
  await h?.close();
});
beforeEach(() => {
  h.sim.webhooks.configure({ encoding: 'base64', header: 'Platform-Signature', secret: h.secret });
});

function event(eventType: string, data: unknown, eventId = randomUUID()): { eventId: string; body: string } {
  return { eventId, body: JSON.stringify({ eventId, eventType, organisationId: h.sim.state.organisationId, sent: '2024-05-01T10:00:00.1234567+00:00', data }) };
}

const courseComplete = (resultId: string = randomUUID()) => event('COURSE_COMPLETE', { resultId, userId: randomUUID(), courseId: randomUUID(), score: 8, maxScore: 10, passRate: 70, passed: true });

async function stored(eventId: string): Promise<Record<string, unknown> | undefined> {
  const { rows } = await h.database.pool.query('select * from trainsync.webhook_events where event_id = $1', [eventId.toLowerCase()]);
  return rows[0] as Record<string, unknown> | undefined;
}

async function metric(text: RegExp): Promise<number> {
  const match = text.exec(await h.app.metrics.registry.metrics());
  return match ? Number(match[1]) : 0;
}

/** The signature refusals counted per minute, summed by reason. */
async function counted(): Promise<{ missing: number; invalid: number }> {
  const { rows } = await h.database.pool.query<{ reason: 'missing' | 'invalid'; n: number }>('select reason, sum(refusals)::int as n from trainsync.webhook_refusal_counts group by reason');
  return { missing: 0, invalid: 0, ...Object.fromEntries(rows.map((r) => [r.reason, r.n])) };
}

const queuedJobs = async (): Promise<Array<{ name: string; data: unknown }>> =>
  (await h.app.queue.queues[WEBHOOK_QUEUE].getJobs(['waiting', 'delayed', 'active'])).map((job) => ({ name: job.name, data: job.data }));

describe('the webhook receiver', () => {
  it('stores a COURSE_COMPLETE signed in base64 or in hex, and queues the load of its result', async () => {
    for (const encoding of ['base64', 'hex'] as const) {
      const resultId = randomUUID();
      const { eventId, body } = courseComplete(resultId);
      const answer = await h.post(body, { 'Platform-Signature': h.sign(body, encoding) });
      expect(answer, encoding).toMatchObject({ status: 200, json: { status: 'stored', eventId } });
      expect(await stored(eventId)).toMatchObject({ event_type: 'COURSE_COMPLETE', processed_at: null, outcome: null });
      const results = await h.database.pool.query('select result_id, processed_at from trainsync.webhook_event_results where event_id = $1', [eventId]);
      expect(results.rows).toEqual([{ result_id: resultId, processed_at: null }]);
      expect(await queuedJobs()).toContainEqual({ name: 'load-webhook-result', data: { resultId, org: 'default' } });
    }
  });

  it('stores the envelope with its sent time (seven fractional digits) as an instant', async () => {
    const { eventId, body } = courseComplete();
    expect((await h.post(body, { 'Platform-Signature': h.sign(body) })).status).toBe(200);
    const row = await stored(eventId);
    expect((row!.sent_at as Date).toISOString()).toBe('2024-05-01T10:00:00.123Z');
    expect(row!.payload).toEqual(JSON.parse(body));
  });

  it('refuses a missing, invalid or tampered signature with 401, counts it and stores nothing but a per-minute count', async () => {
    const refusalsBefore = (await h.database.pool.query<{ id: string }>('select coalesce(max(id), 0) as id from trainsync.webhook_refusals')).rows[0]!.id;
    await h.service.flushRefusals();
    const countsBefore = await counted();
    const missingBefore = await metric(/trainsync_webhook_signature_failures_total\{org="default",reason="missing"\} (\d+)/);
    const invalidBefore = await metric(/trainsync_webhook_signature_failures_total\{org="default",reason="invalid"\} (\d+)/);
    const wrongKey = randomBytes(32).toString('base64');
    const attempts: Array<{ eventId: string; status: number }> = [];
    for (const encoding of ['base64', 'hex'] as const) {
      const missing = courseComplete();
      attempts.push({ eventId: missing.eventId, status: (await h.post(missing.body)).status });
      const invalid = courseComplete();
      attempts.push({ eventId: invalid.eventId, status: (await h.post(invalid.body, { 'Platform-Signature': h.sign(invalid.body, encoding, wrongKey) })).status });
      const tampered = courseComplete();
      const signature = h.sign(tampered.body, encoding);
      attempts.push({ eventId: tampered.eventId, status: (await h.post(tampered.body.replace('"score":8', '"score":9'), { 'Platform-Signature': signature })).status });
    }
    expect(attempts.map((a) => a.status)).toEqual([401, 401, 401, 401, 401, 401]);
    for (const a of attempts) expect(await stored(a.eventId)).toBeUndefined();
    expect(await metric(/trainsync_webhook_signature_failures_total\{org="default",reason="missing"\} (\d+)/)).toBe(missingBefore + 2);
    expect(await metric(/trainsync_webhook_signature_failures_total\{org="default",reason="invalid"\} (\d+)/)).toBe(invalidBefore + 4);
    // Anyone can send these: no row each (a flood cannot grow the database), a count per minute for the console.
    const refusals = (await h.database.pool.query('select * from trainsync.webhook_refusals where id > $1 order by id', [refusalsBefore])).rows;
    expect(refusals).toEqual([]);
    await h.service.flushRefusals();
    const counts = await counted();
    expect({ missing: counts.missing - countsBefore.missing, invalid: counts.invalid - countsBefore.invalid }).toEqual({ missing: 2, invalid: 4 });
    const rows = (await h.database.pool.query('select * from trainsync.webhook_refusal_counts order by minute desc limit 1')).rows as Array<Record<string, unknown>>;
    expect(rows[0]).toMatchObject({ org: 'default', header: h.app.config.TRAINSYNC_WEBHOOK_SIGNATURE_HEADER, last_remote: expect.stringMatching(/127\.0\.0\.1/) });
    expect(Object.keys(rows[0]!).sort()).toEqual(['header', 'last_remote', 'minute', 'org', 'reason', 'refusals']);
  });

  it('answers TEST_EVENT with 200 even unsigned (storing only a signed one)', async () => {
    const unsigned = event('TEST_EVENT', null);
    expect((await h.post(unsigned.body)).status).toBe(200);
    expect(await stored(unsigned.eventId)).toBeUndefined();
    const badlySigned = event('TEST_EVENT', null);
    expect((await h.post(badlySigned.body, { 'Platform-Signature': 'garbage' })).status).toBe(200);
    const signed = event('TEST_EVENT', null);
    expect((await h.post(signed.body, { 'Acme-Signature': h.sign(signed.body, 'hex') })).status).toBe(200);
    expect(await stored(signed.eventId)).toMatchObject({ outcome: 'test', processed_at: expect.any(Date) });
    // The simulator's TEST_EVENT, as a platform sends it when a webhook is added.
    h.sim.webhooks.sendTestEvent();
    await h.sim.webhooks.idle();
    expect(h.sim.webhooks.deliveries.at(-1)).toMatchObject({ eventType: 'TEST_EVENT', state: 'delivered', statuses: [200] });
  });

  it('acknowledges a duplicate delivery without storing or queueing it again', async () => {
    const before = await metric(/trainsync_webhook_events_received_total\{org="default",type="COURSE_COMPLETE",outcome="duplicate"\} (\d+)/);
    const [completion] = h.sim.webhooks.completeCourse({ copies: 3 });
    await h.sim.webhooks.idle();
    const eventId = completion!.eventIds[0]!;
    const copies = h.sim.webhooks.deliveries.filter((d) => d.eventId === eventId);
    expect(copies.map((d) => d.statuses)).toEqual([[200], [200], [200]]);
    const rows = await h.database.pool.query('select count(*)::int as n from trainsync.webhook_event_results where event_id = $1', [eventId]);
    expect(rows.rows[0].n).toBe(1);
    expect((await queuedJobs()).filter((j) => (j.data as { resultId: string }).resultId === completion!.resultId)).toHaveLength(1);
    expect(await metric(/trainsync_webhook_events_received_total\{org="default",type="COURSE_COMPLETE",outcome="duplicate"\} (\d+)/)).toBe(before + 2);
    // A result named again by a later event is still one job while that job waits.
    const again = courseComplete(completion!.resultId);
    expect((await h.post(again.body, { 'Platform-Signature': h.sign(again.body) })).status).toBe(200);
    expect((await queuedJobs()).filter((j) => (j.data as { resultId: string }).resultId === completion!.resultId)).toHaveLength(1);
  });

  it('stores and acknowledges an unknown event type and unusable data, and queues nothing for them', async () => {
    const jobsBefore = (await queuedJobs()).length;
    const unknown = event('USER_CREATED', { userId: randomUUID() });
    expect((await h.post(unknown.body, { 'Platform-Signature': h.sign(unknown.body) })).status).toBe(200);
    expect(await stored(unknown.eventId)).toMatchObject({ event_type: 'USER_CREATED', outcome: 'unknown-type' });
    const unusable = event('COURSE_COMPLETE', { resultId: 'not-a-guid' });
    expect((await h.post(unusable.body, { 'Platform-Signature': h.sign(unusable.body) })).status).toBe(200);
    expect(await stored(unusable.eventId)).toMatchObject({ outcome: 'invalid', error: expect.stringMatching(/resultId/) });
    expect((await queuedJobs()).length).toBe(jobsBefore);
  });

  it('refuses a signed body that is not an event with 400, and stores nothing', async () => {
    const count = async (table: string): Promise<number> => (await h.database.pool.query<{ n: number }>(`select count(*)::int as n from ${table}`)).rows[0]!.n;
    const before = { events: await count('trainsync.webhook_events'), results: await count('trainsync.webhook_event_results'), jobs: (await queuedJobs()).length };
    for (const body of ['not json', JSON.stringify({ eventType: 'COURSE_COMPLETE' })]) {
      expect((await h.post(body, { 'Platform-Signature': h.sign(body) })).status).toBe(400);
    }
    expect({ events: await count('trainsync.webhook_events'), results: await count('trainsync.webhook_event_results'), jobs: (await queuedJobs()).length }).toEqual(before);
  });

  it('answers 413 over the body limit, and stores nothing', async () => {
    const big = event('COURSE_COMPLETE', { resultId: randomUUID(), padding: 'x'.repeat(MAX_BODY) });
    expect((await h.post(big.body, { 'Platform-Signature': h.sign(big.body) })).status).toBe(413);
    expect(await stored(big.eventId)).toBeUndefined();
    // Far over the limit, the connection is cut after the 413 (the client may see either).
    const huge = event('COURSE_COMPLETE', { resultId: randomUUID(), padding: 'x'.repeat(MAX_BODY * 10) });
    const outcome = await h.post(huge.body, { 'Platform-Signature': h.sign(huge.body) }).then((r) => r.status, () => 'cut');
    expect([413, 'cut']).toContain(outcome);
    expect(await stored(huge.eventId)).toBeUndefined();
    // The receiver still works.
    const small = courseComplete();
    expect((await h.post(small.body, { 'Platform-Signature': h.sign(small.body) })).status).toBe(200);
  });

  it('answers 404 elsewhere and 405 to anything but POST', async () => {
    expect((await fetch(h.webhookUrl.replace('/webhooks/platform', '/other'), { method: 'POST', body: '{}' })).status).toBe(404);
    expect((await fetch(h.webhookUrl)).status).toBe(405);
  });

  it('the simulator retries a delivery answered with a non-2xx, with backoff, and gives up after its attempts', async () => {
    const [completion] = h.sim.webhooks.completeCourse({ signature: 'wrong-key' });
    await h.sim.webhooks.idle();
    const record = h.sim.webhooks.deliveries.find((d) => d.eventId === completion!.eventIds[0]);
    expect(record).toMatchObject({ state: 'gave-up', statuses: [401, 401, 401] });
    expect(await stored(completion!.eventIds[0]!)).toBeUndefined();
  });

  it('keeps the refusals bounded: the last 10,000, none older than the retention', async () => {
    await h.database.pool.query(`insert into trainsync.webhook_refusals (org, refused_at, reason, header) values ('default', now() - interval '40 days', 'missing', 'old')`);
    await h.database.pool.query(`insert into trainsync.webhook_refusals (org, reason, header) select 'default', 'invalid', 'n' || i from generate_series(1, $1::int) i`, [REFUSALS_KEPT + 5]);
    expect(await pruneRefusals(owner(h.app).db, 30)).toBeGreaterThanOrEqual(6);
    const left = await h.database.pool.query<{ n: number; old: number; newest: string }>(
      `select count(*)::int as n, count(*) filter (where header = 'old')::int as old, max(header) filter (where id = (select max(id) from trainsync.webhook_refusals)) as newest from trainsync.webhook_refusals`,
    );
    expect(left.rows[0]).toEqual({ n: REFUSALS_KEPT, old: 0, newest: `n${REFUSALS_KEPT + 5}` });
    // The per-minute counts too: none older than the retention.
    await h.database.pool.query(`insert into trainsync.webhook_refusal_counts (org, minute, reason, refusals, header) values ('default', date_trunc('minute', now() - interval '40 days'), 'missing', 7, 'old')`);
    expect(await pruneRefusals(owner(h.app).db, 30)).toBeGreaterThanOrEqual(1);
    expect((await h.database.pool.query(`select count(*)::int as n from trainsync.webhook_refusal_counts where header = 'old'`)).rows[0]).toEqual({ n: 0 });
  });
});

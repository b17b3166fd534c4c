import { owner } from './helpers/owner.ts';
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allJobs } from '../jobs/index.ts';
import { webhookStatusSection } from '../src/commands/status/webhook-status.ts';
import { loadConfig } from '../src/config.ts';
import { WEBHOOK_QUEUE } from '../src/queue/names.ts';
import type { WorkerHandle } from '../src/queue/worker.ts';
import { createApp, type App } from '../src/runtime/app.ts';
import { createLogger } from '../src/runtime/log.ts';
import { startSimulator, type RunningSimulator } from '../src/simulator/index.ts';
import { WEBHOOK_PATH } from '../src/webhooks/receiver.ts';
import { envelopeSchema, planEvent } from '../src/webhooks/events.ts';
import { startWebhookService, type WebhookService } from '../src/webhooks/service.ts';
import { storeEvent } from '../src/webhooks/store.ts';
import { sweepWebhookEvents } from '../src/webhooks/sweep.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { dropPrefix, REDIS_URL, testPrefix } from './helpers/redis.ts';
import { createWebhookHarness } from './helpers/webhook-harness.ts';
import { waitFor } from './helpers/worker-process.ts';

/**
 * One receiver, two organisations (issue 20): each posts to /webhooks/platform/<slug>
 * and is checked with its own secret only; its events are stored under its slug and
 * its results read with its own key (two simulators, one per organisation, so the
 * simulator that answers tells which key read the result). Deliveries are signed here,
 * as the platform signs them, independently of the simulator's own sender.
 */

const SIZES = { results: 30, users: 10, courses: 3, resultsFrom: '2024-01-01', resultsTo: '2024-12-31' };
const secretA = randomBytes(32).toString('base64');
const secretB = randomBytes(32).toString('base64');

let simA: RunningSimulator;
let simB: RunningSimulator;
let database: TestDatabase;
let prefix: string;
let app: App;
let service: WebhookService;
let worker: WorkerHandle;
let dir: string;
let base: string;

beforeAll(async () => {
  // Different seeds: each simulator knows only its own organisation's results and GUID.
  simA = await startSimulator({ seed: 11, apiKey: 'key-of-a-0123456789', sizes: SIZES });
  simB = await startSimulator({ seed: 12, apiKey: 'key-of-b-0123456789', sizes: SIZES });
  database = await createTestDatabase();
  prefix = testPrefix();
  dir = mkdtempSync(path.join(tmpdir(), 'trainsync-orgs-webhooks-'));
  const file = path.join(dir, 'orgs.json');
  writeFileSync(
    file,
    JSON.stringify({
      organisations: [
        { slug: 'a', name: 'Org A', apiUrl: simA.url, apiKey: { env: 'A_KEY' }, webhookSecret: { env: 'A_HOOK' } },
        { slug: 'b', name: 'Org B', apiUrl: simB.url, apiKey: { env: 'B_KEY' }, webhookSecret: { env: 'B_HOOK' } },
      ],
    }),
  );
  const config = loadConfig({
    TRAINSYNC_ORGS_FILE: file,
    A_KEY: simA.apiKey,
    B_KEY: simB.apiKey,
    A_HOOK: secretA,
    B_HOOK: secretB,
    DATABASE_URL: database.url, TRAINSYNC_OWNER_DATABASE_URL: database.ownerUrl,
    REDIS_URL,
    TRAINSYNC_QUEUE_PREFIX: prefix,
    TRAINSYNC_REQUESTS_PER_SECOND: '2000',
    TRAINSYNC_RETRY_MAX_DELAY_MS: '200',
    TRAINSYNC_WEBHOOK_PORT: '0',
    TRAINSYNC_WEBHOOK_HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
  });
  const log = createLogger(config.LOG_LEVEL, new Writable({ write: (_chunk, _encoding, callback) => callback() }));
  app = await createApp(config, log, { jobs: allJobs });
  const started = await startWebhookService({ config, scopes: app.scopes, queue: app.queue, metrics: app.metrics, log });
  if (!started) throw new Error('the webhook service did not start');
  service = started;
  worker = await app.queue.startWorkers([WEBHOOK_QUEUE]);
  base = `http://127.0.0.1:${service.port}${WEBHOOK_PATH}`;
});

afterAll(async () => {
  await service?.close();
  await worker?.close();
  await app?.close();
  await simA?.close();
  await simB?.close();
  await database?.drop();
  if (prefix) await dropPrefix(prefix);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const sign = (body: string, secret: string): string => createHmac('sha256', Buffer.from(secret, 'base64')).update(body).digest('base64');

function completion(sim: RunningSimulator, options: { organisationId?: string | null; eventId?: string } = {}): { eventId: string; resultId: string; body: string } {
  const result = sim.state.results[0]!;
  const eventId = options.eventId ?? randomUUID();
  const body = JSON.stringify({
    eventId,
    eventType: 'COURSE_COMPLETE',
    organisationId: options.organisationId === undefined ? sim.state.organisationId : options.organisationId,
    sent: '2024-05-01T10:00:00.1234567+00:00',
    data: { resultId: result.id, userId: result.userId, courseId: result.courseId, score: 1, maxScore: 2 },
  });
  return { eventId, resultId: result.id, body };
}

async function post(url: string, body: string, secret?: string): Promise<{ status: number; json: Record<string, unknown> }> {
  const headers: Record<string, string> = { 'content-type': 'application/json', ...(secret ? { 'Platform-Signature': sign(body, secret) } : {}) };
  const response = await fetch(url, { method: 'POST', headers, body });
  return { status: response.status, json: (await response.json()) as Record<string, unknown> };
}

async function eventRows(eventId: string): Promise<Array<{ org: string; outcome: string | null }>> {
  const { rows } = await database.pool.query<{ org: string; outcome: string | null }>('select org, outcome from trainsync.webhook_events where event_id = $1 order by org', [eventId]);
  return rows;
}

async function outcomeOf(org: string, eventId: string): Promise<string> {
  return waitFor(
    async () => (await database.pool.query<{ outcome: string | null }>('select outcome from trainsync.webhook_events where org = $1 and event_id = $2', [org, eventId])).rows[0]?.outcome ?? undefined,
    30_000,
    `an outcome for ${org}'s event ${eventId}`,
  );
}

const fetches = (sim: RunningSimulator, resultId: string): number => sim.requests.filter((r) => r.method === 'GET' && r.path.toLowerCase() === `/api/v2/results/${resultId}`).length;

/** Signature refusals of an organisation, by reason, as counted per minute (written now). */
async function refusalCounts(org: string): Promise<Record<string, number>> {
  await service.flushRefusals();
  const { rows } = await database.pool.query<{ reason: string; n: number }>('select reason, sum(refusals)::int as n from trainsync.webhook_refusal_counts where org = $1 group by reason', [org]);
  return Object.fromEntries(rows.map((r) => [r.reason, r.n]));
}

async function refusals(org: string): Promise<Array<{ reason: string; detail: string | null }>> {
  const { rows } = await database.pool.query<{ reason: string; detail: string | null }>('select reason, detail from trainsync.webhook_refusals where org = $1 order by id', [org]);
  return rows;
}

describe('webhooks of two organisations', () => {
  it("stores a delivery to /webhooks/platform/a under a, learns a's GUID, and loads its result with a's key", async () => {
    const { eventId, resultId, body } = completion(simA);
    expect(await post(`${base}/a`, body, secretA)).toMatchObject({ status: 200, json: { status: 'stored' } });
    expect(await outcomeOf('a', eventId)).toBe('loaded');
    expect(await eventRows(eventId)).toEqual([{ org: 'a', outcome: 'loaded' }]);
    // Read from a's platform with a's key; b's was never asked.
    expect(fetches(simA, resultId)).toBeGreaterThanOrEqual(1);
    expect(fetches(simB, resultId)).toBe(0);
    expect(simA.requests.filter((r) => r.path.toLowerCase() === `/api/v2/results/${resultId}`).every((r) => r.status === 200)).toBe(true);
    const { rows } = await database.pool.query('select slug, platform_org_id from training.organisations where slug in ($1, $2) order by slug', ['a', 'b']);
    expect(rows).toEqual([
      { slug: 'a', platform_org_id: simA.state.organisationId },
      { slug: 'b', platform_org_id: null },
    ]);
    const loaded = await database.pool.query('select 1 from training.results where result_id = $1', [resultId]);
    expect(loaded.rowCount).toBe(1);
  });

  it("refuses with 401 a delivery to a's path signed with b's secret, and counts it under a (no row of its own)", async () => {
    const { eventId, body } = completion(simA);
    const before = (await refusals('a')).length;
    const counted = await refusalCounts('a');
    expect((await post(`${base}/a`, body, secretB)).status).toBe(401);
    expect((await post(`${base}/a`, body)).status).toBe(401);
    expect(await eventRows(eventId)).toEqual([]);
    expect(await refusalCounts('a')).toEqual({ invalid: (counted.invalid ?? 0) + 1, missing: (counted.missing ?? 0) + 1 });
    expect((await refusals('a')).length).toBe(before);
    expect(await refusalCounts('b')).toEqual({});
    expect(await refusals('b')).toEqual([]);
  });

  it('refuses (403, recorded) a signed event without organisationId: with several organisations it could be any of theirs', async () => {
    for (const organisationId of [null, '', '  ']) {
      const { eventId, body } = completion(simA, { organisationId });
      const answer = await post(`${base}/a`, body, secretA);
      expect(answer, JSON.stringify(organisationId)).toMatchObject({ status: 403, json: { error: 'organisationId does not match organisation a' } });
      expect(await eventRows(eventId)).toEqual([]);
      expect((await refusals('a')).at(-1)).toMatchObject({ reason: 'organisation-mismatch', detail: expect.stringContaining('organisationId missing') });
    }
    // Without the key at all, too.
    const bare = JSON.stringify({ eventId: randomUUID(), eventType: 'COURSE_COMPLETE', data: { resultId: randomUUID() } });
    expect((await post(`${base}/b`, bare, secretB)).status).toBe(403);
  });

  it("refuses (403, recorded) a delivery signed with a's secret whose organisationId is not a's learned GUID", async () => {
    const { eventId, body } = completion(simA, { organisationId: simB.state.organisationId });
    const answer = await post(`${base}/a`, body, secretA);
    expect(answer).toMatchObject({ status: 403, json: { error: 'organisationId does not match organisation a' } });
    expect(await eventRows(eventId)).toEqual([]);
    const last = (await refusals('a')).at(-1)!;
    expect(last.reason).toBe('organisation-mismatch');
    expect(last.detail).toContain(simB.state.organisationId);
    expect(last.detail).toContain(simA.state.organisationId);
    // Nor may b claim a's GUID: the GUID names one organisation.
    const claim = completion(simB, { organisationId: simA.state.organisationId });
    expect((await post(`${base}/b`, claim.body, secretB)).status).toBe(403);
    expect((await refusals('b')).at(-1)).toMatchObject({ reason: 'organisation-mismatch', detail: expect.stringContaining('belongs to organisation a') });
  });

  it('keeps event ids per organisation: the same eventId to a and to b is stored once under each, read with each key', async () => {
    const eventId = randomUUID();
    const a = completion(simA, { eventId });
    const b = completion(simB, { eventId });
    expect((await post(`${base}/b`, b.body, secretB)).json).toMatchObject({ status: 'stored' });
    expect((await post(`${base}/a`, a.body, secretA)).json).toMatchObject({ status: 'stored' });
    // A retry of b's delivery is a duplicate of b's, not of a's.
    expect((await post(`${base}/b`, b.body, secretB)).json).toMatchObject({ status: 'duplicate' });
    expect(await outcomeOf('a', eventId)).toBe('loaded');
    expect(await outcomeOf('b', eventId)).toBe('loaded');
    expect(await eventRows(eventId)).toEqual([
      { org: 'a', outcome: 'loaded' },
      { org: 'b', outcome: 'loaded' },
    ]);
    expect(fetches(simB, b.resultId)).toBeGreaterThanOrEqual(1);
    expect(fetches(simA, b.resultId)).toBe(0);
    const { rows } = await database.pool.query('select platform_org_id from training.organisations where slug = $1', ['b']);
    expect(rows[0]).toEqual({ platform_org_id: simB.state.organisationId });
  });

  it('the sweep queues each stored event again under its own organisation, so each is read with its own key', async () => {
    // Stored as the receiver stores them, but never queued (as if Redis had been down).
    const stored: Array<{ org: string; eventId: string; resultId: string }> = [];
    for (const [org, sim] of [
      ['a', simA],
      ['b', simB],
    ] as const) {
      const result = sim.state.results[1]!;
      const c = completion(sim);
      const body = JSON.parse(c.body) as Record<string, unknown>;
      const envelope = envelopeSchema.parse({ ...body, data: { ...(body.data as object), resultId: result.id } });
      await storeEvent(owner(app).scope(org), envelope, JSON.stringify(envelope), planEvent(envelope));
      stored.push({ org, eventId: c.eventId, resultId: result.id });
    }
    const counts = await sweepWebhookEvents({ scopes: app.scopes, queue: app.queue, log: app.log }, { minAgeMs: 0, retentionDays: 30 });
    expect(counts.queued).toBeGreaterThanOrEqual(2);
    for (const { org, eventId } of stored) expect(await outcomeOf(org, eventId)).toBe('loaded');
    expect(fetches(simA, stored[0]!.resultId)).toBeGreaterThanOrEqual(1);
    expect(fetches(simB, stored[0]!.resultId)).toBe(0);
    expect(fetches(simB, stored[1]!.resultId)).toBeGreaterThanOrEqual(1);
    expect(fetches(simA, stored[1]!.resultId)).toBe(0);
  });

  it('answers 404 for the bare path (no default organisation here) and for an organisation not configured', async () => {
    const { body } = completion(simA);
    expect((await post(base, body, secretA)).status).toBe(404);
    expect((await post(`${base}/c`, body, secretA)).status).toBe(404);
  });

  it('labels /metrics with the organisation: deliveries, refusals, platform requests, jobs and rows', async () => {
    const text = await app.metrics.registry.metrics();
    expect(text).toMatch(/trainsync_webhook_events_received_total\{org="a",type="COURSE_COMPLETE",outcome="stored"\} [1-9]/);
    expect(text).toMatch(/trainsync_webhook_events_received_total\{org="b",type="COURSE_COMPLETE",outcome="duplicate"\} 1/);
    expect(text).toMatch(/trainsync_webhook_events_received_total\{org="a",type="other",outcome="organisation-mismatch"\} 4/);
    expect(text).toMatch(/trainsync_webhook_signature_failures_total\{org="a",reason="invalid"\} 1/);
    expect(text).toMatch(/trainsync_api_requests_total\{org="a",method="GET",status="200"\} [1-9]/);
    expect(text).toMatch(/trainsync_api_requests_total\{org="b",method="GET",status="200"\} [1-9]/);
    expect(text).toMatch(/trainsync_job_duration_seconds_count\{org="b",job="load-webhook-result",outcome="completed"\} [1-9]/);
    expect(text).toMatch(/trainsync_webhook_events_processed_total\{org="a",type="COURSE_COMPLETE",outcome="loaded"\} [1-9]/);
    expect(text).toMatch(/trainsync_rows_loaded_total\{org="a",table="results",outcome="(inserted|updated|unchanged)"\} [1-9]/);
    // Queue counts stay per queue: one queue serves every organisation.
    expect(text).not.toMatch(/trainsync_queue_jobs\{[^}]*org=/);
  });

  it("shows each organisation's own webhook backlog in status", async () => {
    const a = await webhookStatusSection(app, 'a');
    const b = await webhookStatusSection(app, 'b');
    expect(a.rows).toHaveLength(1);
    expect(b.rows).toHaveLength(1);
    const count = async (org: string): Promise<number> => (await database.pool.query<{ n: number }>('select count(*)::int as n from trainsync.webhook_events where org = $1', [org])).rows[0]!.n;
    expect(a.rows[0]!['last 24 h by outcome']).toBe(`loaded ${await count('a')}`);
    expect(b.rows[0]!['last 24 h by outcome']).toBe(`loaded ${await count('b')}`);
    expect(await count('a')).not.toBe(await count('b'));
  });
});

describe('webhooks of a single organisation (no orgs file)', () => {
  it('keep the bare path and TRAINSYNC_WEBHOOK_SECRET; /webhooks/platform/default is the same organisation', async () => {
    const h = await createWebhookHarness();
    try {
      const bare = JSON.stringify({ eventId: randomUUID(), eventType: 'TEST_EVENT', organisationId: h.sim.state.organisationId, data: null });
      expect((await h.post(bare, { 'Platform-Signature': h.sign(bare) })).status).toBe(200);
      const named = JSON.stringify({ eventId: randomUUID(), eventType: 'TEST_EVENT', organisationId: h.sim.state.organisationId, data: null });
      const answer = await fetch(`${h.webhookUrl}/default`, { method: 'POST', headers: { 'content-type': 'application/json', 'Platform-Signature': h.sign(named) }, body: named });
      expect(answer.status).toBe(200);
      const { rows } = await h.database.pool.query("select org, outcome from trainsync.webhook_events where event_type = 'TEST_EVENT' order by received_at");
      expect(rows).toEqual([
        { org: 'default', outcome: 'test' },
        { org: 'default', outcome: 'test' },
      ]);
      const org = await h.database.pool.query("select platform_org_id from training.organisations where slug = 'default'");
      expect(org.rows[0]).toEqual({ platform_org_id: h.sim.state.organisationId });
      expect((await fetch(`${h.webhookUrl}/other`, { method: 'POST', body: bare })).status).toBe(404);
    } finally {
      await h.close();
    }
  });
});

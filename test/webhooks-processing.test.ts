import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webhookStatusSection } from '../src/commands/status/webhook-status.ts';
import { addResult, getResult, updateResult } from '../src/simulator/index.ts';
import { metaOf } from '../src/simulator/state.ts';
import type { Completion } from '../src/simulator/webhooks.ts';
import { loadWebhookResult, WEBHOOK_RESULT_ATTEMPTS } from '../src/webhooks/load-result.ts';
import { createWebhookHarness, type WebhookHarness } from './helpers/webhook-harness.ts';
import { waitFor } from './helpers/worker-process.ts';

/**
 * Events processed end to end in one process: the simulator completes courses and
 * delivers signed events, the receiver stores them, the webhooks queue loads each
 * named result with GET results/{id} into training.results, as the sync does.
 */

let h: WebhookHarness;

beforeAll(async () => {
  h = await createWebhookHarness({ worker: true });
});
afterAll(async () => {
  await h?.close();
});

/** GET results/{id} requests the simulator received for one result, with their statuses. */
function fetchesOf(resultId: string): number[] {
  return h.sim.requests.filter((r) => r.method === 'GET' && r.path.toLowerCase() === `/api/v2/results/${resultId}`).map((r) => r.status);
}

async function row(resultId: string): Promise<Record<string, unknown> | undefined> {
  const { rows } = await h.database.pool.query('select * from training.results where result_id = $1', [resultId]);
  return rows[0] as Record<string, unknown> | undefined;
}

describe('processing webhook events', () => {
  it('loads the result a COURSE_COMPLETE names, answers included, and records the delivery latency', async () => {
    // A retake of a result that has filter answers: the upsert must keep them as the sync does.
    const existing = addResult(h.sim.state, { resultFilters: [h.sim.state.filters[0]!.answers[0]!.id, h.sim.state.filters[1]!.answers[0]!.id] });
    const [completion] = h.sim.webhooks.completeCourse({ resultId: existing.id, score: 91 });
    expect(await h.outcomeOf(completion!.eventIds[0]!)).toBe('loaded');

    const stored = await row(existing.id);
    const platform = getResult(h.sim.state, existing.id)!;
    expect(stored).toMatchObject({ user_id: platform.userId, course_id: platform.courseId, score: 91, maximum_score: 100, is_complete: true });
    expect((stored!.date_completed as Date).toISOString()).toBe(platform.dateCompleted);
    const answers = await h.database.pool.query('select answer_id from training.result_filter_answers where result_id = $1 order by 1', [existing.id]);
    expect(answers.rows.map((r) => r.answer_id)).toEqual([...platform.resultFilters].sort());
    expect(fetchesOf(existing.id)).toEqual([200]);

    const metrics = await h.app.metrics.registry.metrics();
    expect(metrics).toMatch(/trainsync_webhook_events_processed_total\{org="default",type="COURSE_COMPLETE",outcome="loaded"\} [1-9]/);
    expect(metrics).toMatch(/trainsync_webhook_delivery_seconds_count\{org="default",type="COURSE_COMPLETE"\} [1-9]/);
    expect(metrics).toMatch(/trainsync_webhook_events_received_total\{org="default",type="COURSE_COMPLETE",outcome="stored"\} [1-9]/);
    expect(metrics).toMatch(/trainsync_rows_loaded_total\{org="default",table="results",outcome="inserted"\} [1-9]/);
  });

  it('loads an older revision payload (no completionTime, no passed)', async () => {
    const [completion] = h.sim.webhooks.completeCourse({ legacy: true });
    expect(await h.outcomeOf(completion!.eventIds[0]!)).toBe('loaded');
    const payload = await h.database.pool.query("select payload->'data' as data from trainsync.webhook_events where event_id = $1", [completion!.eventIds[0]]);
    expect(payload.rows[0].data).not.toHaveProperty('completionTime');
    expect(await row(completion!.resultId)).toMatchObject({ score: getResult(h.sim.state, completion!.resultId)!.score });
  });

  it('loads the parent and every child of a MULTI_COURSE_COMPLETE, one fetch per result however many events name it', async () => {
    const [completion] = h.sim.webhooks.completeCourse({ childCourses: 3 });
    const { resultId: parentId, childResultIds, eventIds } = completion!;
    expect(eventIds).toHaveLength(4);
    for (const eventId of eventIds) expect(await h.outcomeOf(eventId)).toBe('loaded');

    expect(await row(parentId)).toMatchObject({ multi_course_result_id: null, course_type: 'MULTI_COURSE' });
    for (const child of childResultIds) expect(await row(child)).toMatchObject({ multi_course_result_id: parentId, course_type: 'SINGLE_COURSE' });
    // Each child is named by two events (its own and the module's): read once, or twice
    // when the module's event arrived while the first read was under way.
    expect(fetchesOf(parentId)).toEqual([200]);
    for (const child of childResultIds) expect(fetchesOf(child).length).toBeLessThanOrEqual(2);
    const pending = await h.database.pool.query('select count(*)::int as n from trainsync.webhook_event_results where processed_at is null');
    expect(pending.rows[0].n).toBe(0);
  });

  it('retries a result the API cannot return yet, then loads it', async () => {
    const [completion] = h.sim.webhooks.completeCourse({ readableAfterMs: 3_000 });
    expect(await h.outcomeOf(completion!.eventIds[0]!, 60_000)).toBe('loaded');
    const statuses = fetchesOf(completion!.resultId);
    // First RESULT_NOT_FOUND (400, as the simulator answers an unknown id), then the row.
    expect(statuses[0]).toBe(400);
    expect(statuses.at(-1)).toBe(200);
    expect(await row(completion!.resultId)).toBeDefined();
  });

  it('after its last attempt leaves an unreadable result to the nightly sync, with the outcome recorded', async () => {
    const resultId = h.sim.state.prng.guid();
    const body = JSON.stringify({
      eventId: h.sim.state.prng.guid(),
      eventType: 'COURSE_COMPLETE',
      organisationId: h.sim.state.organisationId,
      sent: new Date().toISOString(),
      data: { resultId, userId: h.sim.state.users[0]!.id, courseId: h.sim.state.courses[0]!.id, score: 1, maxScore: 2, passRate: null },
    });
    const eventId = (JSON.parse(body) as { eventId: string }).eventId;
    expect((await h.post(body, { 'Platform-Signature': h.sign(body) })).status).toBe(200);
    // The queued job meets RESULT_NOT_FOUND and backs off; this is its last attempt, run here.
    const summary = await loadWebhookResult(resultId, {
      ...h.app.services(),
      log: h.app.log,
      job: { id: 'test', name: 'load-webhook-result', attemptsMade: WEBHOOK_RESULT_ATTEMPTS - 1 },
    });
    expect(summary).toMatchObject({ outcome: 'not-found', fetches: 1 });
    expect(summary.webhookEvents).toEqual([expect.objectContaining({ type: 'COURSE_COMPLETE', outcome: 'not-found' })]);
    expect(await h.outcomeOf(eventId)).toBe('not-found');
    const event = await h.database.pool.query('select error from trainsync.webhook_events where event_id = $1', [eventId]);
    expect(event.rows[0].error).toMatch(/nightly sync.*RESULT_NOT_FOUND/);
    expect(await row(resultId)).toBeUndefined();
  });

  it('a result changed again while its event waited is read once, with its latest data', async () => {
    const [completion] = h.sim.webhooks.completeCourse({ copies: 5 });
    updateResult(h.sim.state, completion!.resultId, { score: 7 });
    expect(await h.outcomeOf(completion!.eventIds[0]!)).toBe('loaded');
    await h.sim.webhooks.idle();
    expect(fetchesOf(completion!.resultId)).toHaveLength(1);
    expect(await row(completion!.resultId)).toMatchObject({ score: 7 });
  });

  it('a malformed result named by a webhook is quarantined once, after at most two reads', async () => {
    const bad = addResult(h.sim.state, {});
    // The fault spoils every result whose creation number divides evenly: this one, and none made after it here.
    h.sim.setFaults({ malformedResultEvery: metaOf(h.sim.state, bad).seq });
    let completion: Completion | undefined;
    try {
      [completion] = h.sim.webhooks.completeCourse({ resultId: bad.id });
      expect(await h.outcomeOf(completion!.eventIds[0]!)).toBe('failed');
      await h.sim.webhooks.idle();
    } finally {
      h.sim.setFaults({ malformedResultEvery: 0 });
    }
    const reads = fetchesOf(bad.id);
    expect(reads.length).toBeGreaterThanOrEqual(1);
    expect(reads.length).toBeLessThanOrEqual(2);

    const quarantined = await h.database.pool.query(
      "select raw, message, times_seen, run_id from trainsync.quarantine where resource = 'results' and raw->>'userId' = $1 and raw->>'courseId' = $2",
      [bad.userId, bad.courseId],
    );
    expect(quarantined.rows).toHaveLength(1);
    expect(quarantined.rows[0]).toMatchObject({ times_seen: 1, run_id: null });
    expect(quarantined.rows[0].message).toMatch(/^(id|score): /);
    expect(quarantined.rows[0].raw).toMatchObject({ userId: bad.userId, courseId: bad.courseId });

    const events = await h.database.pool.query('select outcome, error, processed_at from trainsync.webhook_events where event_id = any($1)', [completion!.eventIds.map((id) => id.toLowerCase())]);
    expect(events.rows.length).toBeGreaterThanOrEqual(1);
    for (const event of events.rows) {
      expect(event.processed_at).not.toBeNull();
      expect(event.error).toMatch(/failed validation; quarantined in trainsync\.quarantine: (id|score): /);
    }
    expect(await row(bad.id)).toBeUndefined();
  });

  it('`status` shows the last event received and an empty backlog once everything is processed', async () => {
    await h.sim.webhooks.idle();
    await waitFor(
      async () => ((await h.database.pool.query('select count(*)::int as n from trainsync.webhook_events where processed_at is null')).rows[0].n === 0 ? true : undefined),
      30_000,
      'no event waiting',
    );
    const section = await webhookStatusSection(h.app, 'default');
    expect(section.rows).toHaveLength(1);
    expect(section.rows[0]).toMatchObject({ 'last type': 'COURSE_COMPLETE', 'waiting (backlog)': 0 });
    expect(String(section.rows[0]!['last 24 h by outcome'])).toMatch(/loaded \d+, not-found 1/);
  });
});

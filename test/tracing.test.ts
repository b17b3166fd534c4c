import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findUser, ORG_EMAIL_DOMAIN } from '../src/simulator/index.ts';
import { tracingOn } from '../src/lib/tracing/spans.ts';
import { ancestry, startOtlpReceiver, type Flat, type OtlpReceiver, type ReceivedSpan } from './helpers/otlp-receiver.ts';
import { createScimHarness, type ScimHarness } from './helpers/scim-harness.ts';
import { WEBHOOK_QUEUE } from '../src/queue/names.ts';
import type { WorkerHandle } from '../src/queue/worker.ts';
import { startWebhookService, type WebhookService } from '../src/webhooks/service.ts';
import { summaryOf } from './helpers/sync-harness.ts';
import { runCli } from './helpers/cli.ts';
import { waitFor } from './helpers/worker-process.ts';

/**
 * Traces as an operator's collector receives them: a worker (this process: the SCIM
 * service, a provisioning worker, the sync queue worked here) with OTEL_TRACES_EXPORTER=otlp
 * sends OTLP/HTTP JSON to a receiver in this process. A results sync is one trace from the
 * enqueue to the commit; a SCIM deactivation is one trace from the request, through the
 * plan and BullMQ, to the platform's disable call; and nothing sent names a person or
 * carries a secret.
 */

const PATCH = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const SERVER = 2;
const CLIENT = 3;

let receiver: OtlpReceiver;
let h: ScimHarness;
let webhooks: WebhookService;
let webhookWorker: WorkerHandle;
const secretKey = randomBytes(32).toString('hex');
const webhookSecret = randomBytes(32).toString('base64');
// The person this test provisions, and what must never reach a span.
const person = { email: `tracy.leaver${ORG_EMAIL_DOMAIN}`, givenName: 'Tracy', familyName: 'Leaverton', password: 'Pw-7qk2x9-traced' };

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  h = await createScimHarness({
    simulator: { seed: 43, webhooks: { secret: webhookSecret, retryBaseMs: 100, retryMaxMs: 1_000 } },
    env: {
      TRAINSYNC_SECRET_KEY: secretKey,
      TRAINSYNC_WEBHOOK_SECRET: webhookSecret,
      TRAINSYNC_WEBHOOK_PORT: '0',
      OTEL_TRACES_EXPORTER: 'otlp',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '50',
      OTEL_SERVICE_NAME: 'trainsync-test',
    },
  });
  // The webhook receiver and its queue's worker, as `worker` starts them; the simulator delivers its signed events to it.
  webhooks = (await startWebhookService({ config: h.config, scopes: h.app.scopes, queue: h.app.queue, metrics: h.app.metrics, log: h.app.log }))!;
  h.sim.webhooks.configure({ url: `http://127.0.0.1:${webhooks.port}/webhooks/platform` });
  webhookWorker = await h.app.queue.startWorkers([WEBHOOK_QUEUE]);
});
afterAll(async () => {
  h?.sim.webhooks.close();
  await webhooks?.close();
  await webhookWorker?.close();
  await h?.close();
  await receiver?.close();
});

/** The spans of one trace. */
const traceOf = (span: ReceivedSpan): ReceivedSpan[] => receiver.spans.filter((s) => s.traceId === span.traceId);

/**
 * Waits until a span matching `match` has arrived with every span up to its trace's root
 * (a parent is sent when it ends, often after its children), the root being `root`.
 */
function arrived(what: string, match: (s: ReceivedSpan) => boolean, root: (s: ReceivedSpan) => boolean): Promise<ReceivedSpan> {
  return waitFor(async () => {
    const found = receiver.spans.find((s) => match(s) && root(ancestry(receiver.spans, s).at(-1)!));
    return found;
  }, 30_000, what);
}

describe('traces (OTEL_TRACES_EXPORTER=otlp)', () => {
  it('a sync is one trace: enqueue, the job, its walk, and under the walk its page requests, COPYs and commits', async () => {
    expect(tracingOn()).toBe(true);
    const outcomes = await h.sync(['results'], { full: true });
    const summary = summaryOf(outcomes, 'results');
    expect(summary.inserted).toBeGreaterThan(0);
    const job = await arrived(
      'the results sync job span and its trace up to the enqueue',
      (s) => s.name === 'job sync-results',
      (root) => root.name === 'add sync.sync-results',
    );
    const trace = traceOf(job);
    const walk = trace.find((s) => s.name === 'walk results');
    expect(walk, 'walk span').toBeDefined();
    // job ← BullMQ's attempt ← the enqueue (`sync` adds the job, in the same trace).
    expect(ancestry(trace, walk!).map((s) => s.name)).toEqual(['walk results', 'job sync-results', 'process sync', 'add sync.sync-results']);
    expect(job.attributes).toMatchObject({ 'trainsync.org': 'default', 'trainsync.resource': 'results', 'trainsync.job.name': 'sync-results', 'trainsync.job.attempt': 1 });
    expect(walk!.attributes).toMatchObject({ 'trainsync.org': 'default', 'trainsync.resource': 'results', 'trainsync.run.id': summary.runId });

    const underWalk = (s: ReceivedSpan): boolean => ancestry(trace, s).includes(walk!);
    const pages = trace.filter((s) => s.kind === CLIENT && s.attributes['http.request.method'] === 'GET');
    expect(pages.length).toBeGreaterThan(0);
    for (const page of pages) {
      expect(underWalk(page)).toBe(true);
      expect(page.attributes).toMatchObject({ 'url.template': expect.stringMatching(/^\/api\/v2\/[a-z/{}_-]+$/), 'http.response.status_code': 200, 'server.address': '127.0.0.1' });
    }
    const copies = trace.filter((s) => s.name.startsWith('COPY '));
    expect(copies.length).toBeGreaterThan(0);
    for (const copy of copies) expect(underWalk(copy), copy.name).toBe(true);
    // The rows' commits are the walk's; the run's own record (started before it) commits under the job.
    const commits = trace.filter((s) => s.name === 'COMMIT');
    expect(commits.filter(underWalk).length).toBeGreaterThan(0);
    for (const commit of commits) expect(ancestry(trace, commit)).toContain(job);
    expect(copies[0]!.attributes).toMatchObject({ 'db.system.name': 'postgresql', 'db.operation.name': 'COPY', 'trainsync.copy.bytes': expect.any(Number) });
    expect(job.resource['service.name']).toBe('trainsync-test');
  });

  it('a SCIM deactivation is one trace: the request, the plan, BullMQ, the job and the platform\'s disable call', async () => {
    const created = await h.request('POST', '/Users', {
      schemas: [USER],
      userName: person.email,
      name: { givenName: person.givenName, familyName: person.familyName },
      emails: [{ primary: true, value: person.email }],
      password: person.password,
      active: true,
    });
    expect(created.status).toBe(201);
    await h.settled();
    const off = await h.request('PATCH', `/Users/${created.json.id}`, { schemas: [PATCH], Operations: [{ op: 'replace', value: { active: false } }] });
    expect(off.status).toBe(200);
    await h.settled();
    expect(findUser(h.sim.state, person.email)).toMatchObject({ hasAccess: false });

    const disable = await arrived(
      'the platform disable call, and its trace back to the SCIM request',
      (s) => s.kind === CLIENT && s.attributes['url.template'] === '/api/v2/users/{id}/disable',
      (root) => root.kind === SERVER,
    );
    const chain = ancestry(receiver.spans, disable).map((s) => s.name);
    // From the platform call up to the request, every step of the way.
    expect(chain[0]).toBe(`${disable.attributes['http.request.method']} /api/v2/users/{id}/disable`);
    expect(chain).toEqual(expect.arrayContaining(['job set-access', 'process provision', 'provisioning enqueue', 'provisioning scim', 'scim plan']));
    expect(chain.indexOf('job set-access')).toBeLessThan(chain.indexOf('process provision'));
    expect(chain.indexOf('process provision')).toBeLessThan(chain.indexOf('provisioning enqueue'));
    expect(chain.indexOf('provisioning enqueue')).toBeLessThan(chain.indexOf('provisioning scim'));
    expect(chain.indexOf('provisioning scim')).toBeLessThan(chain.indexOf('scim plan'));
    expect(chain.at(-1)).toBe('PATCH /scim/v2/{org}/Users/{id}');
    const request = ancestry(receiver.spans, disable).at(-1)!;
    expect(request.kind).toBe(SERVER);
    expect(request.attributes).toMatchObject({ 'http.request.method': 'PATCH', 'http.route': '/scim/v2/{org}/Users/{id}', 'http.response.status_code': 200, 'trainsync.org': 'default', 'trainsync.scim.resource': 'Users', 'trainsync.server': 'SCIM' });
    expect(disable.attributes).toMatchObject({ 'http.response.status_code': 204, 'trainsync.platform.attempts': 1 });
    const pipeline = traceOf(disable).find((s) => s.name === 'provisioning scim')!;
    expect(pipeline.attributes).toMatchObject({ 'trainsync.org': 'default', 'trainsync.provisioning.source': 'scim', 'trainsync.plan.actions': 1, 'trainsync.enqueued': 1 });
  });

  it('a webhook delivery starts a trace that reaches the job loading its result', async () => {
    const [completion] = h.sim.webhooks.completeCourse({});
    expect(completion!.eventIds.length).toBeGreaterThan(0);
    const load = await arrived(
      'the result load of the delivered event, in the delivery\'s trace',
      (s) => s.kind === CLIENT && s.attributes['url.template'] === '/api/v2/results/{id}',
      (root) => root.kind === SERVER,
    );
    const chain = ancestry(receiver.spans, load);
    expect(chain.map((s) => s.name)).toEqual(expect.arrayContaining(['job load-webhook-result', 'process webhooks']));
    const delivery = chain.at(-1)!;
    expect(delivery).toMatchObject({ kind: SERVER, name: 'POST /webhooks/platform' });
    expect(delivery.attributes).toMatchObject({ 'http.route': '/webhooks/platform', 'http.response.status_code': 200, 'trainsync.org': 'default', 'trainsync.server': 'webhook receiver' });
  });

  it('a command sends its spans before it exits: `trainsync sync courses`, working its job itself', async () => {
    const run = await runCli(['sync', 'courses'], h.env);
    expect(run.code).toBe(0);
    // No waiting: the command flushed its spans (and had them answered) before it exited.
    const job = receiver.spans.find((s) => s.name === 'job sync-courses');
    expect(job, 'the command\'s job span').toBeDefined();
    expect(ancestry(receiver.spans, job!).map((s) => s.name)).toEqual(['job sync-courses', 'process sync', 'add sync.sync-courses']);
    expect(traceOf(job!).some((s) => s.name === 'walk courses' && s.attributes['trainsync.resource'] === 'courses')).toBe(true);
  });

  it('no span carries the person\'s data or a secret: not in a name, an attribute, an event, a link, a status or the resource', async () => {
    // The create's job (its BullMQ id is `create-user:<e-mail>`) and the password's were traced too.
    await waitFor(async () => (['job create-user', 'job set-password'].every((name) => receiver.spans.some((s) => s.name === name)) ? true : undefined), 30_000, 'the create-user and set-password jobs');
    const secrets = [person.email, person.email.split('@')[0]!, person.givenName, person.familyName, person.password, h.sim.apiKey, h.token, secretKey, webhookSecret];
    const texts = (value: Flat | undefined): string[] => (value === undefined || value === null ? [] : Array.isArray(value) ? value.flatMap(texts) : [String(value)]);
    const values = receiver.spans.flatMap((s) => [
      s.name,
      s.status.message ?? '',
      ...Object.values(s.attributes).flatMap(texts),
      ...Object.values(s.resource).flatMap(texts),
      ...s.events.flatMap((e) => [e.name, ...Object.values(e.attributes).flatMap(texts)]),
      ...s.links.flatMap((l) => Object.values(l.attributes).flatMap(texts)),
    ]);
    expect(values.length).toBeGreaterThan(200);
    for (const secret of secrets) {
      const found = values.filter((v) => v.toLowerCase().includes(secret.toLowerCase()));
      expect(found, `spans carrying ${JSON.stringify(secret)}`).toEqual([]);
    }
    // And nothing of them anywhere in what was sent (attribute keys, ids, anything).
    for (const secret of secrets) expect(receiver.bodies.some((body) => body.toLowerCase().includes(secret.toLowerCase())), secret).toBe(false);
    // Not vacuous: the spans do name the organisation and the resource.
    expect(receiver.spans.some((s) => s.attributes['trainsync.org'] === 'default' && s.attributes['trainsync.resource'] === 'results')).toBe(true);
  });
});

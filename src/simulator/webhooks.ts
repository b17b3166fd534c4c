import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { Reply } from './reply.ts';
import { invalidModel, json } from './reply.ts';
import { addResult, getResult, updateResult, type ApiResult, type SimulatorState } from './state.ts';

/**
 * The platform's webhooks, as the vendor describes them (platform-api-notes.md
 * section 6): JSON events POSTed to one URL, signed with an HMAC-SHA256 of the raw body
 * keyed by the base64-decoded validation secret, retried with backoff on anything but a
 * 2xx (bounded here: the real platform keeps trying for 3 days). Signing is written
 * here on its own, not borrowed from trainsync's receiver, so a test exercises both.
 */

export interface WebhookSettings {
  /** Where events go; none: completions change the data but nothing is sent. */
  url: string | undefined;
  /** The validation secret as the platform shows it (base64). Generated when not given. */
  secret: string;
  /** The vendor's `<ProductName>-Signature`. */
  header: string;
  encoding: 'base64' | 'hex';
  /** Attempts per delivery, the first included. */
  maxAttempts: number;
  /** Backoff before the 2nd attempt; doubles each time, capped at retryMaxMs. */
  retryBaseMs: number;
  retryMaxMs: number;
  timeoutMs: number;
  /** Deliveries in flight at once. */
  concurrency: number;
}

export const DEFAULT_WEBHOOK_SETTINGS: Readonly<Omit<WebhookSettings, 'secret'>> = Object.freeze({
  url: undefined,
  header: 'Platform-Signature',
  encoding: 'base64',
  maxAttempts: 10,
  retryBaseMs: 1_000,
  retryMaxMs: 30_000,
  timeoutMs: 10_000,
  concurrency: 16,
});

const count = z.number().int().min(0);
export const webhookSettingsPatchSchema = z
  .object({
    url: z.url().nullable(),
    secret: z.string().regex(/^[A-Za-z0-9+/]+={0,2}$/, 'base64'),
    header: z.string().regex(/^[A-Za-z0-9-]+$/),
    encoding: z.enum(['base64', 'hex']),
    maxAttempts: count.min(1).max(100),
    retryBaseMs: count.max(600_000),
    retryMaxMs: count.max(3_600_000),
    timeoutMs: count.min(1).max(600_000),
    concurrency: count.min(1).max(1_000),
  })
  .partial()
  .strict();

/** One event on its way: every attempt's status (0 = no answer), and how it ended. */
export interface DeliveryRecord {
  eventId: string;
  eventType: string;
  /** 1 for the first copy; duplicates (as a platform retrying after a lost 2xx would send) count up. */
  copy: number;
  statuses: number[];
  state: 'pending' | 'delivered' | 'gave-up';
  createdAt: number;
  deliveredAt?: number;
}

export const completeCourseSchema = z
  .object({
    userId: z.string().optional(),
    courseId: z.string().optional(),
    /** An existing result to complete again (a retake); otherwise a new result. */
    resultId: z.string().optional(),
    score: count.optional(),
    maxScore: count.optional(),
    /** Send each event this many times (same eventId). */
    copies: count.min(1).max(100).default(1),
    /** GET results/{id} does not know the result (RESULT_NOT_FOUND) until this long after the event. */
    readableAfterMs: count.max(3_600_000).default(0),
    /** An older revision's payload: no completionTime, no passed. */
    legacy: z.boolean().default(false),
    /** A multi-course module of this many courses: a COURSE_COMPLETE each, then MULTI_COURSE_COMPLETE. */
    childCourses: count.max(50).default(0),
    /** Complete this many courses at once (a burst), each for a random user and course. */
    count: count.min(1).max(100_000).default(1),
    /** Override the signing for this call: a wrong key, or no signature header. */
    signature: z.enum(['valid', 'wrong-key', 'none']).default('valid'),
  })
  .strict();
export type CompleteCourseRequest = z.input<typeof completeCourseSchema>;

export interface Completion {
  resultId: string;
  /** The events sent for it: one, or a COURSE_COMPLETE per child then the MULTI_COURSE_COMPLETE. */
  eventIds: string[];
  childResultIds: string[];
}

export interface DeliveriesSummary {
  events: number;
  delivered: number;
  pending: number;
  gaveUp: number;
  attempts: number;
  byStatus: Record<string, number>;
}

export interface WebhookSender {
  readonly settings: Readonly<WebhookSettings>;
  configure(patch: z.input<typeof webhookSettingsPatchSchema>): void;
  /** Completes courses in the data and sends their events (delivery goes on in the background). */
  completeCourse(request?: CompleteCourseRequest): Completion[];
  /** Sends TEST_EVENT, unsigned, as the platform does when a webhook is added. */
  sendTestEvent(): string;
  /** Every delivery so far (the last 100,000), in the order events were sent. */
  readonly deliveries: readonly DeliveryRecord[];
  summary(): DeliveriesSummary;
  /** Resolves once nothing is pending (delivered or given up). */
  idle(): Promise<void>;
  resetDeliveries(): void;
  /** Stops retries and new deliveries. */
  close(): void;
}

const MAX_RECORDS = 100_000;

/** The vendor's example timestamp shape: seven fractional digits and a `+00:00` offset. */
function vendorTime(ms: number): string {
  return new Date(ms).toISOString().replace('Z', '0000+00:00');
}

function passed(score: number, maxScore: number, passRate: number | null): boolean | null {
  if (passRate === null || maxScore <= 0) return null;
  return (score / maxScore) * 100 >= passRate;
}

export function createWebhookSender(state: SimulatorState, initial: Partial<WebhookSettings> = {}): WebhookSender {
  const settings: WebhookSettings = { ...DEFAULT_WEBHOOK_SETTINGS, secret: randomBytes(32).toString('base64'), ...initial };
  const deliveries: DeliveryRecord[] = [];
  const timers = new Set<NodeJS.Timeout>();
  const waiting: Array<() => void> = [];
  let inFlight = 0;
  let pending = 0;
  let closed = false;
  let idleWaiters: Array<() => void> = [];

  const later = (ms: number, fn: () => void): void => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      if (!closed) fn();
    }, ms);
    timers.add(timer);
  };

  const settle = (record: DeliveryRecord, outcome: 'delivered' | 'gave-up'): void => {
    record.state = outcome;
    if (outcome === 'delivered') record.deliveredAt = Date.now();
    pending -= 1;
    if (pending === 0) {
      const waiters = idleWaiters;
      idleWaiters = [];
      for (const resolve of waiters) resolve();
    }
  };

  /** Runs `fn` when a delivery slot is free. */
  const withSlot = (fn: () => Promise<void>): void => {
    const start = (): void => {
      inFlight += 1;
      void fn().finally(() => {
        inFlight -= 1;
        waiting.shift()?.();
      });
    };
    if (inFlight < settings.concurrency) start();
    else waiting.push(start);
  };

  const sign = (body: string, secret: string): string => {
    const digest = createHmac('sha256', Buffer.from(secret, 'base64')).update(body, 'utf8').digest();
    return settings.encoding === 'hex' ? digest.toString('hex') : digest.toString('base64');
  };

  const attempt = (record: DeliveryRecord, body: string, headers: Record<string, string>): void => {
    withSlot(async () => {
      if (closed) return;
      const url = settings.url;
      let status = 0;
      if (url !== undefined) {
        try {
          const response = await fetch(url, { method: 'POST', headers, body, signal: AbortSignal.timeout(settings.timeoutMs) });
          status = response.status;
          await response.arrayBuffer().catch(() => undefined);
        } catch {
          status = 0;
        }
      }
      record.statuses.push(status);
      if (status >= 200 && status <= 299) return settle(record, 'delivered');
      if (record.statuses.length >= settings.maxAttempts) return settle(record, 'gave-up');
      const backoff = Math.min(settings.retryMaxMs, settings.retryBaseMs * 2 ** (record.statuses.length - 1));
      // Jitter, as real senders add, so retries of a burst do not arrive in lockstep.
      later(Math.round(backoff * (0.8 + Math.random() * 0.4)), () => attempt(record, body, headers));
    });
  };

  const send = (eventType: string, data: unknown, options: { copies?: number; signature?: 'valid' | 'wrong-key' | 'none' } = {}): string => {
    const eventId = randomUUID();
    const body = JSON.stringify({ eventId, eventType, organisationId: state.organisationId, sent: vendorTime(Date.now()), data });
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    const signature = options.signature ?? (eventType === 'TEST_EVENT' ? 'none' : 'valid');
    if (signature !== 'none') headers[settings.header] = sign(body, signature === 'valid' ? settings.secret : randomBytes(32).toString('base64'));
    for (let copy = 1; copy <= (options.copies ?? 1); copy += 1) {
      const record: DeliveryRecord = { eventId, eventType, copy, statuses: [], state: 'pending', createdAt: Date.now() };
      deliveries.push(record);
      if (deliveries.length > MAX_RECORDS + 1_000) deliveries.splice(0, deliveries.length - MAX_RECORDS);
      pending += 1;
      attempt(record, body, headers);
    }
    return eventId;
  };

  /** Makes the result exist (or change) now, or only after `delayMs`: until then GET results/{id} does not have it. */
  const upsertResult = (result: ApiResult, existing: boolean, delayMs: number): void => {
    const apply = (): void => {
      if (existing) updateResult(state, result.id, result);
      else addResult(state, result);
    };
    if (delayMs > 0) later(delayMs, apply);
    else apply();
  };

  const completeOne = (request: z.output<typeof completeCourseSchema>): Completion => {
    const now = Date.now();
    const prng = state.prng;
    const existing = request.resultId === undefined ? undefined : getResult(state, request.resultId);
    if (request.resultId !== undefined && !existing) throw new Error(`no result ${request.resultId}`);
    const userId = request.userId?.toLowerCase() ?? existing?.userId ?? prng.pick(state.users).id;
    const pickCourse = (): { id: string; passRate: number | null } => prng.pick(state.courses);
    const course = request.courseId ? (state.courses.find((c) => c.id === request.courseId!.toLowerCase()) ?? { id: request.courseId.toLowerCase(), passRate: null }) : existing ? { id: existing.courseId, passRate: existing.passRate } : pickCourse();
    const maxScore = request.maxScore ?? 100;
    const makeResult = (id: string, courseId: string, passRate: number | null, parentId: string | null, courseType: string): ApiResult => ({
      ...(id === existing?.id ? existing : {}),
      id,
      userId,
      courseId,
      multiCourseResultId: parentId,
      isComplete: true,
      dateCompleted: new Date(now).toISOString(),
      score: request.score ?? prng.int(0, maxScore),
      maximumScore: maxScore,
      passRate,
      courseType,
      resultFilters: existing?.resultFilters ?? [],
    });
    const courseEvent = (result: ApiResult): unknown => ({
      resultId: result.id,
      userId: result.userId,
      courseId: result.courseId,
      ...(request.legacy ? {} : { completionTime: vendorTime(now) }),
      score: result.score,
      maxScore: result.maximumScore,
      passRate: result.passRate,
      ...(request.legacy ? {} : { passed: passed(result.score ?? 0, result.maximumScore ?? 0, result.passRate) }),
    });
    const sendOptions = { copies: request.copies, signature: request.signature };

    if (request.childCourses === 0) {
      const result = makeResult(existing?.id ?? prng.guid(), course.id, course.passRate, existing?.multiCourseResultId ?? null, existing?.courseType ?? 'SINGLE_COURSE');
      upsertResult(result, existing !== undefined, request.readableAfterMs);
      return { resultId: result.id, eventIds: [send('COURSE_COMPLETE', courseEvent(result), sendOptions)], childResultIds: [] };
    }
    const parentId = existing?.id ?? prng.guid();
    const children = Array.from({ length: request.childCourses }, () => {
      const child = pickCourse();
      return makeResult(prng.guid(), child.id, child.passRate, parentId, 'SINGLE_COURSE');
    });
    const parent = makeResult(parentId, course.id, course.passRate, null, 'MULTI_COURSE');
    for (const child of children) upsertResult(child, false, request.readableAfterMs);
    upsertResult(parent, existing !== undefined, request.readableAfterMs);
    const eventIds = children.map((child) => send('COURSE_COMPLETE', courseEvent(child), sendOptions));
    eventIds.push(
      send('MULTI_COURSE_COMPLETE', { resultId: parentId, userId, courseId: course.id, childResultIds: children.map((c) => c.id) }, sendOptions),
    );
    return { resultId: parentId, eventIds, childResultIds: children.map((c) => c.id) };
  };

  return {
    get settings() {
      return settings;
    },
    configure(patch) {
      const clean = webhookSettingsPatchSchema.parse(patch);
      for (const [key, value] of Object.entries(clean)) {
        if (value !== undefined) Object.assign(settings, { [key]: value === null ? undefined : value });
      }
    },
    completeCourse(request = {}) {
      const parsed = completeCourseSchema.parse(request);
      if (parsed.count > 1 && parsed.resultId !== undefined) throw new Error('count > 1 makes new results; it cannot be combined with resultId');
      return Array.from({ length: parsed.count }, () => completeOne(parsed));
    },
    sendTestEvent: () => send('TEST_EVENT', null),
    deliveries,
    summary() {
      const byStatus: Record<string, number> = {};
      let attempts = 0;
      let delivered = 0;
      let gaveUp = 0;
      for (const record of deliveries) {
        attempts += record.statuses.length;
        for (const status of record.statuses) byStatus[String(status)] = (byStatus[String(status)] ?? 0) + 1;
        if (record.state === 'delivered') delivered += 1;
        if (record.state === 'gave-up') gaveUp += 1;
      }
      return { events: new Set(deliveries.map((d) => d.eventId)).size, delivered, pending, gaveUp, attempts, byStatus };
    },
    idle: () => (pending === 0 ? Promise.resolve() : new Promise<void>((resolve) => idleWaiters.push(resolve))),
    resetDeliveries() {
      deliveries.length = 0;
    },
    close() {
      closed = true;
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      waiting.length = 0;
      const waiters = idleWaiters;
      idleWaiters = [];
      for (const resolve of waiters) resolve();
    },
  };
}

const deliveriesQuerySchema = z.object({ recent: z.coerce.number().int().min(0).max(1_000).default(0) });

/** `/__simulator/webhooks/*`: configure, complete courses, send TEST_EVENT, inspect deliveries. */
export function handleWebhookAdmin(sender: WebhookSender, method: string, path: string, query: URLSearchParams, raw: Buffer | undefined): Reply {
  let body: unknown = {};
  try {
    body = JSON.parse(raw?.toString('utf8') || '{}');
  } catch {
    return invalidModel([{ field: 'body', message: 'not valid JSON' }]);
  }
  const problems = (error: z.ZodError): Reply => invalidModel(error.issues.map((i) => ({ field: i.path.join('.') || 'body', message: i.message })));
  const view = (): Record<string, unknown> => ({ ...sender.settings });
  if (path === '/__simulator/webhooks/config') {
    if (method === 'GET') return json(view());
    if (method !== 'POST') return { status: 405 };
    const patch = webhookSettingsPatchSchema.safeParse(body);
    if (!patch.success) return problems(patch.error);
    sender.configure(patch.data);
    return json(view());
  }
  if (method === 'POST' && path === '/__simulator/webhooks/complete') {
    const request = completeCourseSchema.safeParse(body);
    if (!request.success) return problems(request.error);
    try {
      return json({ completions: sender.completeCourse(request.data) });
    } catch (error) {
      return invalidModel([{ field: 'body', message: error instanceof Error ? error.message : String(error) }]);
    }
  }
  if (method === 'POST' && path === '/__simulator/webhooks/test') return json({ eventId: sender.sendTestEvent() });
  if (method === 'GET' && path === '/__simulator/webhooks/deliveries') {
    const q = deliveriesQuerySchema.safeParse(Object.fromEntries(query));
    if (!q.success) return problems(q.error);
    return json({ ...sender.summary(), recent: q.data.recent > 0 ? sender.deliveries.slice(-q.data.recent) : [] });
  }
  if (method === 'POST' && path === '/__simulator/webhooks/deliveries/reset') {
    sender.resetDeliveries();
    return { status: 204 };
  }
  return { status: 404 };
}

import { z } from 'zod';
import { guid, normaliseInstant } from '../platform/schemas.ts';

/**
 * The platform's webhook events (platform-api-notes.md section 6). The envelope is
 * `{eventId, eventType, organisationId, sent, data}`. Objects are loose (the vendor
 * adds fields); only what processing needs is required: the result ids. Everything
 * else is documented but optional here, because the event only says *which* result to
 * read: the row itself comes from `GET results/{id}`.
 */

export const EVENT_TYPES = {
  test: 'TEST_EVENT',
  courseComplete: 'COURSE_COMPLETE',
  multiCourseComplete: 'MULTI_COURSE_COMPLETE',
} as const;

/** Metric label for a type: the known ones, else `other` (a signed sender could invent many). */
export function typeLabel(eventType: string): string {
  return (Object.values(EVENT_TYPES) as string[]).includes(eventType) ? eventType : 'other';
}

/** C0 and C1 control characters (NUL included): the database cannot store a NUL, and none belongs in an id. */
const CONTROL_RE = /[\u0000-\u001f\u007f-\u009f]/;
const idText = (max: number) =>
  z
    .string()
    .trim()
    .min(1)
    .max(max)
    .refine((s) => !CONTROL_RE.test(s), 'must not contain control characters');

export const envelopeSchema = z.looseObject({
  eventId: idText(200),
  eventType: idText(100),
  organisationId: z.string().nullish(),
  sent: z.string().nullish(),
  data: z.unknown().optional(),
});
export type Envelope = z.output<typeof envelopeSchema>;

/** A signed body, read: the JSON as parsed (what is stored) and its envelope. */
export interface SignedEvent {
  json: unknown;
  envelope: Envelope;
}

/** What the receiver answers a signed body without a usable eventId or eventType. */
export const ENVELOPE_REQUIRED = 'eventId and eventType are required: text of 1 to 200 (eventType: 100) characters, without control characters';

/**
 * The receiver's body schema (its routes' `schema.body`), checked once the signature over the
 * bytes is valid: the bytes as JSON, an envelope with a usable eventId and eventType. A refusal's
 * message is the 400's words; an envelope's names the field and its problem (`params`) for the log.
 */
export const signedEventBody = z.instanceof(Buffer).transform((bytes, ctx): SignedEvent => {
  let json: unknown;
  try {
    json = JSON.parse(bytes.toString('utf8'));
  } catch {
    ctx.issues.push({ code: 'custom', message: 'the body is not JSON', input: undefined });
    return z.NEVER;
  }
  const envelope = envelopeSchema.safeParse(json);
  if (!envelope.success) {
    const problem = envelope.error.issues[0];
    ctx.issues.push({ code: 'custom', message: ENVELOPE_REQUIRED, input: undefined, params: { field: problem?.path.join('.'), problem: problem?.message } });
    return z.NEVER;
  }
  return { json, envelope: envelope.data };
});

const score = z.number().nullish();

/** Newer revisions add `completionTime` and `passed`; older payloads lack both. */
export const courseCompleteSchema = z.looseObject({
  resultId: guid,
  userId: guid.optional(),
  courseId: guid.optional(),
  completionTime: z.string().nullish(),
  score,
  // The webhook says maxScore where a Result says maximumScore.
  maxScore: score,
  passRate: score,
  passed: z.boolean().nullish(),
});

/** Sent when a whole module is complete; each child also sends its own COURSE_COMPLETE. */
export const multiCourseCompleteSchema = z.looseObject({
  resultId: guid,
  userId: guid.optional(),
  courseId: guid.optional(),
  childResultIds: z.array(guid),
});

/** What to do with a stored event. */
export type EventPlan =
  /** Load these results (the event is done when each one is). */
  | { kind: 'load'; resultIds: string[] }
  /** Nothing to load: stored with this outcome at once. */
  | { kind: 'done'; outcome: 'test' | 'unknown-type' | 'invalid'; error?: string };

/** The results an event names, or why there are none. */
export function planEvent(envelope: Envelope): EventPlan {
  switch (envelope.eventType) {
    case EVENT_TYPES.test:
      return { kind: 'done', outcome: 'test' };
    case EVENT_TYPES.courseComplete: {
      const data = courseCompleteSchema.safeParse(envelope.data);
      if (!data.success) return { kind: 'done', outcome: 'invalid', error: z.prettifyError(data.error) };
      return { kind: 'load', resultIds: [data.data.resultId] };
    }
    case EVENT_TYPES.multiCourseComplete: {
      const data = multiCourseCompleteSchema.safeParse(envelope.data);
      if (!data.success) return { kind: 'done', outcome: 'invalid', error: z.prettifyError(data.error) };
      return { kind: 'load', resultIds: [...new Set([data.data.resultId, ...data.data.childResultIds])] };
    }
    default:
      return { kind: 'done', outcome: 'unknown-type' };
  }
}

/** The envelope's `sent` (7 fractional digits and an offset in the vendor's example) as an instant, if it parses. */
export function sentAt(envelope: Envelope): string | null {
  return envelope.sent ? (normaliseInstant(envelope.sent) ?? null) : null;
}

import type { z } from 'zod';
import { envelopeSchema, normaliseGuid, normaliseInstant, resultSchema, type Envelope, type Result } from './schemas.ts';

/**
 * Checks for the two shapes on the hot path of a results walk, the page envelope and
 * the Result, at the cost of a check rather than of zod's parse: plain type tests, the
 * same normalisers zod's transforms call (character tests, no regex for the usual
 * forms), then one shallow record in zod's output shape whose unknown fields are the
 * platform's own values, carried over, not cloned. The input is never changed, so a
 * record set aside keeps exactly what the platform sent, and a caller's objects stay
 * its own. Anything a check cannot confirm, every invalid record included, goes to the
 * zod schema as before, so zod stays the definition of each shape and writes every
 * message; test/platform-fast-checks.test.ts holds the two to the same answers.
 */

/** What a fast check returns: the value as zod would output it, or undefined to ask zod. */
export type FastCheck<T> = (raw: unknown) => T | undefined;

type Fields = Record<string, unknown>;

function objectOf(raw: unknown): Fields | undefined {
  return typeof raw === 'object' && raw !== null && !Array.isArray(raw) ? (raw as Fields) : undefined;
}

function guidOf(value: unknown): string | undefined {
  return typeof value === 'string' ? normaliseGuid(value) : undefined;
}

/** An integer zod's `.int()` accepts, null for null or absent, undefined for anything else. */
function intOrNull(value: unknown): number | null | undefined {
  if (value === null || value === undefined) return null;
  return Number.isSafeInteger(value) ? (value as number) : undefined;
}

const NOT_ACCEPTED = Symbol('not accepted');

function guidListOf(value: unknown): string[] | typeof NOT_ACCEPTED {
  if (value === null || value === undefined) return [];
  if (!Array.isArray(value)) return NOT_ACCEPTED;
  let out: string[] | undefined;
  for (let i = 0; i < value.length; i++) {
    const item: unknown = value[i];
    const id = guidOf(item);
    if (id === undefined) return NOT_ACCEPTED;
    // A new array only when an id had to change; usually the platform's own is kept.
    if (id !== item) out ??= (value as string[]).slice(0, i);
    out?.push(id);
  }
  return out ?? (value as string[]);
}

/** Result fields in zod's output order; anything else is the platform's addition. */
const RESULT_ORDER = ['id', 'userId', 'courseId', 'multiCourseResultId', 'isComplete', 'dateCompleted', 'score', 'maximumScore', 'passRate', 'courseType', 'resultFilters'];
const RESULT_FIELDS = new Set(RESULT_ORDER);

/** `resultSchema`'s output, or undefined to ask zod. */
export function checkResult(raw: unknown): Result | undefined {
  const r = objectOf(raw);
  if (r === undefined) return undefined;
  const id = guidOf(r.id);
  const userId = guidOf(r.userId);
  const courseId = guidOf(r.courseId);
  const isComplete = r.isComplete;
  if (id === undefined || userId === undefined || courseId === undefined || typeof isComplete !== 'boolean') return undefined;
  const multiCourseResultId = r.multiCourseResultId === null || r.multiCourseResultId === undefined ? null : guidOf(r.multiCourseResultId);
  if (multiCourseResultId === undefined) return undefined;
  const rawDate = r.dateCompleted;
  const dateCompleted = rawDate === null || rawDate === undefined ? null : typeof rawDate === 'string' ? normaliseInstant(rawDate) : undefined;
  if (dateCompleted === undefined) return undefined;
  const score = intOrNull(r.score);
  const maximumScore = intOrNull(r.maximumScore);
  const passRate = intOrNull(r.passRate);
  if (score === undefined || maximumScore === undefined || passRate === undefined) return undefined;
  const courseType = r.courseType === null || r.courseType === undefined ? null : typeof r.courseType === 'string' ? r.courseType : undefined;
  if (courseType === undefined) return undefined;
  const resultFilters = guidListOf(r.resultFilters);
  if (resultFilters === NOT_ACCEPTED) return undefined;

  const out: Fields = { id, userId, courseId, multiCourseResultId, isComplete, dateCompleted, score, maximumScore, passRate, courseType, resultFilters };
  // The platform's fields usually come in this order: the next one is one comparison, any other key is looked up.
  let next = 0;
  for (const key in r) {
    if (key === RESULT_ORDER[next]) next += 1;
    else if (!RESULT_FIELDS.has(key)) out[key] = r[key];
  }
  return out as Result;
}

function optionalCount(value: unknown, min: number): boolean {
  return value === undefined || (Number.isSafeInteger(value) && (value as number) >= min);
}

/** `envelopeSchema`'s output, or undefined to ask zod: the entities stay unknown (each is checked on its own). */
export function checkEnvelope(raw: unknown): Envelope | undefined {
  const e = objectOf(raw);
  if (e === undefined || !Array.isArray(e.entities)) return undefined;
  if (!optionalCount(e.page, 1) || !optionalCount(e.entitiesReturned, 0) || !optionalCount(e.totalEntities, 0)) return undefined;
  const links = e.links;
  // zod's output lists no links as []; the platform's own envelope serves as it is otherwise.
  if (links === null || links === undefined) return { ...e, links: [] } as unknown as Envelope;
  if (!Array.isArray(links)) return undefined;
  for (const item of links) {
    const link = objectOf(item);
    if (link === undefined || typeof link.type !== 'string' || typeof link.href !== 'string') return undefined;
    if (link.method !== undefined && typeof link.method !== 'string') return undefined;
  }
  return e as Envelope;
}

const CHECKS = new Map<z.ZodType, FastCheck<unknown>>([
  [resultSchema, checkResult],
  [envelopeSchema, checkEnvelope],
]);

/** The fast check standing in front of `schema`, if it has one. */
export function fastCheckFor<T>(schema: z.ZodType<T>): FastCheck<T> | undefined {
  return CHECKS.get(schema) as FastCheck<T> | undefined;
}

/** `schema.safeParse(raw)` with the fast check first: the same answer, without zod when the check confirms it. */
export function checkOrParse<T>(schema: z.ZodType<T>, check: FastCheck<T> | undefined, raw: unknown): z.ZodSafeParseResult<T> {
  const fast = check?.(raw);
  if (fast !== undefined) return { success: true, data: fast };
  return schema.safeParse(raw);
}

import { z } from 'zod';

/**
 * zod schemas for every body the platform API v2 returns (see
 * shared/reference/platform-api-notes.md). Objects are loose: unknown fields are
 * accepted and kept, because the vendor adds fields without notice. Ids are
 * normalised to lower case and instants to UTC ISO strings, so the rest of trainsync
 * compares like with like.
 */

const GUID_RE = /^\{?([0-9a-fA-F]{8})-?([0-9a-fA-F]{4})-?([0-9a-fA-F]{4})-?([0-9a-fA-F]{4})-?([0-9a-fA-F]{12})\}?$/;

/** 1 at the character codes of 0-9 and a-f. */
const LOWER_HEX = new Uint8Array(128);
for (const c of '0123456789abcdef') LOWER_HEX[c.charCodeAt(0)] = 1;

/** Every character of `value` in [from, to) is 0-9 or a-f. */
function lowerHexRun(value: string, from: number, to: number): boolean {
  for (let i = from; i < to; i++) {
    const c = value.charCodeAt(i);
    if (c > 102 || LOWER_HEX[c] === 0) return false;
  }
  return true;
}

/**
 * True for a lower-case, hyphenated GUID. Character codes, not a regex: most ids arrive
 * in this form and a page holds hundreds of them. The hyphens first, then each run of
 * hex digits by a table (a loop without a test of the position: 2.5× faster than one).
 */
export function isCanonicalGuid(value: string): boolean {
  return (
    value.length === 36 &&
    value.charCodeAt(8) === 45 && // '-'
    value.charCodeAt(13) === 45 &&
    value.charCodeAt(18) === 45 &&
    value.charCodeAt(23) === 45 &&
    lowerHexRun(value, 0, 8) &&
    lowerHexRun(value, 9, 13) &&
    lowerHexRun(value, 14, 18) &&
    lowerHexRun(value, 19, 23) &&
    lowerHexRun(value, 24, 36)
  );
}

/** Lower-case, hyphenated GUID; accepts braces and missing hyphens as .NET writes them. */
export function normaliseGuid(value: string): string | undefined {
  if (isCanonicalGuid(value)) return value;
  const m = GUID_RE.exec(value.trim());
  if (!m) return undefined;
  return `${m[1]}-${m[2]}-${m[3]}-${m[4]}-${m[5]}`.toLowerCase();
}

export const guid = z.string().transform((value, ctx) => {
  const id = normaliseGuid(value);
  if (id === undefined) {
    ctx.addIssue({ code: 'custom', message: `not a GUID: ${JSON.stringify(value.slice(0, 60))}` });
    return z.NEVER;
  }
  return id;
});

const INSTANT_RE = /^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}(?::\d{2})?)(?:\.(\d+))?(Z|[+-]\d{2}:?\d{2})?$/i;

/** Two decimal digits at `at` as a number, or -1. */
function twoDigits(text: string, at: number): number {
  const a = text.charCodeAt(at) - 48;
  const b = text.charCodeAt(at + 1) - 48;
  return a >= 0 && a <= 9 && b >= 0 && b <= 9 ? a * 10 + b : -1;
}

/** Days in a month of the proleptic Gregorian calendar (JavaScript's and Postgres's). */
function daysInMonth(year: number, month: number): number {
  if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/**
 * `YYYY-MM-DD` at the start of `text` is a day the calendar has. JS's Date.parse rolls
 * 2024-02-30 over to March; Postgres refuses it. Arithmetic, not a Date, per value.
 */
function isCalendarDate(text: string): boolean {
  const century = twoDigits(text, 0);
  const yy = twoDigits(text, 2);
  const month = twoDigits(text, 5);
  const day = twoDigits(text, 8);
  if (century < 0 || yy < 0 || text.charCodeAt(4) !== 45 || text.charCodeAt(7) !== 45) return false;
  return month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth(century * 100 + yy, month);
}

/** The spec's own form, `YYYY-MM-DDTHH:MM:SS.mmmZ`, as a valid instant (checked by character). */
function isMillisUtc(value: string): boolean {
  if (value.length !== 24 || value.charCodeAt(10) !== 84 || value.charCodeAt(13) !== 58 || value.charCodeAt(16) !== 58) return false; // T : :
  if (value.charCodeAt(19) !== 46 || value.charCodeAt(23) !== 90) return false; // . Z
  const hour = twoDigits(value, 11);
  const minute = twoDigits(value, 14);
  const second = twoDigits(value, 17);
  const millis = twoDigits(value, 20);
  const lastMilli = value.charCodeAt(22) - 48;
  return hour >= 0 && hour < 24 && minute >= 0 && minute < 60 && second >= 0 && second < 60 && millis >= 0 && lastMilli >= 0 && lastMilli <= 9 && isCalendarDate(value);
}

/**
 * A platform timestamp as an unambiguous instant: `YYYY-MM-DDTHH:MM:SS.ffffff±HH:MM`.
 * The platform sends no offset (taken as UTC, which the spec says it is), an offset,
 * or seven fractional digits (.NET ticks; Postgres keeps six, so the seventh is cut).
 */
export function normaliseInstant(value: string): string | undefined {
  // Fast path for the spec's own form (UTC with milliseconds): same text as the slow path gives.
  if (isMillisUtc(value)) return `${value.slice(0, 23)}000+00:00`;
  const m = INSTANT_RE.exec(value.trim());
  if (!m) return undefined;
  const time = m[2]!.length === 5 ? `${m[2]}:00` : m[2]!;
  const fraction = (m[3] ?? '').slice(0, 6).padEnd(6, '0');
  let offset = (m[4] ?? 'Z').toUpperCase();
  if (offset === 'Z') offset = '+00:00';
  else if (!offset.includes(':')) offset = `${offset.slice(0, 3)}:${offset.slice(3)}`;
  const text = `${m[1]}T${time}.${fraction}${offset}`;
  if (!isCalendarDate(m[1]!)) return undefined;
  return Number.isNaN(Date.parse(text.replace(/(\.\d{3})\d{3}/, '$1'))) ? undefined : text;
}

export const instant = z.string().transform((value, ctx) => {
  const text = normaliseInstant(value);
  if (text === undefined) {
    ctx.addIssue({ code: 'custom', message: `not a timestamp: ${JSON.stringify(value.slice(0, 60))}` });
    return z.NEVER;
  }
  return text;
});

export const courseCategorySchema = z.looseObject({ type: z.string(), name: z.string() });

export const courseSchema = z.looseObject({
  id: guid,
  name: z.string(),
  passRate: z.number().int().min(0).max(100).nullable(),
  categories: z.array(courseCategorySchema).default([]),
});
export type Course = z.output<typeof courseSchema>;

export const resultSchema = z.looseObject({
  id: guid,
  userId: guid,
  courseId: guid,
  multiCourseResultId: guid.nullable().optional().transform((v) => v ?? null),
  isComplete: z.boolean(),
  dateCompleted: instant.nullable().optional().transform((v) => v ?? null),
  score: z.number().int().nullable().optional().transform((v) => v ?? null),
  maximumScore: z.number().int().nullable().optional().transform((v) => v ?? null),
  passRate: z.number().int().nullable().optional().transform((v) => v ?? null),
  courseType: z.string().nullable().optional().transform((v) => v ?? null),
  resultFilters: z.array(guid).nullable().optional().transform((v) => v ?? []),
});
export type Result = z.output<typeof resultSchema>;

export const filterAnswerSchema = z.looseObject({ id: guid, answer: z.string() });
export const filterSchema = z.looseObject({
  id: guid,
  name: z.string(),
  answers: z.array(filterAnswerSchema).default([]),
});
export type ReportingFilter = z.output<typeof filterSchema>;

/** A course a group assigns; the name is the platform's label at listing time. */
export const groupCourseSchema = z.looseObject({ id: guid, name: z.string().nullable().optional().transform((v) => v ?? null) });
/** GET groups (vendor reference): `{id, name, courses[{id, name}]}`; courses may be missing or null. */
export const groupSchema = z.looseObject({
  id: guid,
  name: z.string(),
  courses: z.array(groupCourseSchema).nullable().optional().transform((v) => v ?? []),
});
export type Group = z.output<typeof groupSchema>;

export const userSchema = z.looseObject({
  id: guid,
  username: z.string().nullable().optional(),
  email: z.string(),
  firstName: z.string().nullable().optional().transform((v) => v ?? null),
  lastName: z.string().nullable().optional().transform((v) => v ?? null),
  role: z.string().nullable().optional().transform((v) => v ?? null),
  organisationIdentifier: z.string().nullable().optional().transform((v) => v ?? null),
  hasAccess: z.boolean(),
  usingSeat: z.boolean().optional(),
  userFilters: z.array(z.string()).nullable().optional(),
});
export type PlatformUser = z.output<typeof userSchema>;

export const seatsSchema = z.looseObject({
  seatsInUse: z.number().int().min(0),
  totalSeats: z.number().int().min(0),
});
export type Seats = z.output<typeof seatsSchema>;

export const linkSchema = z.looseObject({
  type: z.string(),
  href: z.string(),
  method: z.string().optional(),
});

/** The paged envelope; entities stay unknown so one bad record cannot sink a page. */
export const envelopeSchema = z.looseObject({
  entities: z.array(z.unknown()),
  page: z.number().int().min(1).optional(),
  entitiesReturned: z.number().int().min(0).optional(),
  totalEntities: z.number().int().min(0).optional(),
  links: z.array(linkSchema).nullable().optional().transform((v) => v ?? []),
});
export type Envelope = z.output<typeof envelopeSchema>;

/** The documented error body: `{code, message, details}`. Any other shape is unclassified. */
export const errorBodySchema = z.looseObject({
  code: z.string(),
  message: z.string().optional(),
  details: z.unknown().optional(),
});
export type ErrorBody = z.output<typeof errorBodySchema>;

/** Create-user body as the vendor documents it; role is sent always (see notes, [conflict]). */
export const createUserSchema = z.object({
  email: z.string(),
  firstName: z.string(),
  lastName: z.string(),
  role: z.enum(['USER', 'ADMIN']),
  password: z.string().optional(),
  organisationIdentifier: z.string().optional(),
});
export type CreateUserInput = z.input<typeof createUserSchema>;

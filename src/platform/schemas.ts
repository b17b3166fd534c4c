import { z } from 'zod';

/**
 * zod schemas for every body the platform API v2 returns (see
 * shared/reference/platform-api-notes.md). Objects are loose: unknown fields are
 * accepted and kept, because the vendor adds fields without notice. Ids are
 * normalised to lower case and instants to UTC ISO strings, so the rest of trainsync
 * compares like with like.
 */

const GUID_RE = /^\{?([0-9a-fA-F]{8})-?([0-9a-fA-F]{4})-?([0-9a-fA-F]{4})-?([0-9a-fA-F]{4})-?([0-9a-fA-F]{12})\}?$/;

/** Lower-case, hyphenated GUID; accepts braces and missing hyphens as .NET writes them. */
const CANONICAL_GUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export function normaliseGuid(value: string): string | undefined {
  // Fast path: most ids already arrive canonical, and a page holds hundreds of them.
  if (CANONICAL_GUID_RE.test(value)) return value;
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

/**
 * A platform timestamp as an unambiguous instant: `YYYY-MM-DDTHH:MM:SS.ffffff±HH:MM`.
 * The platform sends no offset (taken as UTC, which the spec says it is), an offset,
 * or seven fractional digits (.NET ticks; Postgres keeps six, so the seventh is cut).
 */
const MILLIS_UTC_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** JS's Date.parse rolls 2024-02-30 over to March; Postgres refuses it. Check the calendar. */
function isCalendarDate(day: string): boolean {
  const ms = Date.parse(`${day}T00:00:00Z`);
  return !Number.isNaN(ms) && new Date(ms).toISOString().slice(0, 10) === day;
}

export function normaliseInstant(value: string): string | undefined {
  // Fast path for the spec's own form (UTC with milliseconds): same text as the slow path gives.
  if (MILLIS_UTC_RE.test(value)) {
    return isCalendarDate(value.slice(0, 10)) && value.slice(11, 13) < '24' && value.slice(14, 16) < '60' && value.slice(17, 19) < '60'
      ? `${value.slice(0, 23)}000+00:00`
      : undefined;
  }
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

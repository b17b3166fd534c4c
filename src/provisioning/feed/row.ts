import { z } from 'zod';
import { normaliseGuid } from '../../platform/schemas.ts';
import { FEED_FIELDS, type FeedField, type FeedRole, type FeedRow, type FeedStatus } from './types.ts';

/** Status words an HR export uses, case-insensitive. Anything else is a row error. */
export const ACTIVE_WORDS: readonly string[] = ['active', '1', 'true', 'enabled', 'employed'];
export const INACTIVE_WORDS: readonly string[] = ['inactive', 'terminated', 'leave', 'leaver', 'left', 'disabled', 'suspended', '0', 'false'];

/** An empty status means active: exports commonly fill the column only for leavers. */
export function parseStatus(value: string): FeedStatus | undefined {
  const word = value.trim().toLowerCase();
  if (word === '' || ACTIVE_WORDS.includes(word)) return 'active';
  if (INACTIVE_WORDS.includes(word)) return 'inactive';
  return undefined;
}

const show = (value: string): string => JSON.stringify(value.length > 60 ? `${value.slice(0, 57)}...` : value);

/** CSV gives strings; JSON Lines may give numbers or booleans for the same fields. */
function asText(value: unknown): string | undefined {
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return undefined;
}

const text = z.unknown().transform((value, ctx) => {
  const t = asText(value);
  if (t === undefined) {
    ctx.addIssue({ code: 'custom', message: `${show(JSON.stringify(value) ?? '')} is not text` });
    return z.NEVER;
  }
  return t.trim();
});

const emailCheck = z.email();

const employeeId = text.pipe(
  z.string().min(1, { error: 'is empty; every row needs an employee_id' }).max(200, { error: 'is longer than 200 characters' }),
);

const email = text.transform((value, ctx) => {
  if (value === '') {
    ctx.addIssue({ code: 'custom', message: 'is empty; every row needs a work e-mail' });
    return z.NEVER;
  }
  if (!emailCheck.safeParse(value).success) {
    ctx.addIssue({ code: 'custom', message: `${show(value)} is not an e-mail address` });
    return z.NEVER;
  }
  return value;
});

const name = text.transform((value) => (value === '' ? null : value));

const status = z.unknown().transform((value, ctx): FeedStatus => {
  const t = asText(value);
  const parsed = t === undefined ? undefined : parseStatus(t);
  if (parsed === undefined) {
    ctx.addIssue({
      code: 'custom',
      message:
        `${show(t ?? String(value))} is not a status; use one of ${ACTIVE_WORDS.join(', ')} (active) or ${INACTIVE_WORDS.join(', ')} (inactive), ` +
        `or say what it means in a profile's "statusMap" (e.g. {${show(t ?? String(value))}: "inactive"})`,
    });
    return z.NEVER;
  }
  return parsed;
});

const groups = z.unknown().transform((value, ctx): string[] => {
  let parts: unknown[];
  if (Array.isArray(value)) parts = value;
  else {
    const t = asText(value);
    if (t === undefined) {
      ctx.addIssue({ code: 'custom', message: 'is neither text nor a list of GUIDs' });
      return z.NEVER;
    }
    parts = t.split(';');
  }
  const ids = new Set<string>();
  for (const part of parts) {
    const raw = typeof part === 'string' ? part.trim() : '';
    if (raw === '' && typeof part === 'string') continue;
    const id = normaliseGuid(raw);
    if (id === undefined) {
      ctx.addIssue({ code: 'custom', message: `${show(typeof part === 'string' ? part : String(part))} is not a group GUID (groups are GUIDs separated by ";")` });
      return z.NEVER;
    }
    ids.add(id);
  }
  return [...ids].sort();
});

const role = text.transform((value, ctx): FeedRole => {
  const upper = value.toUpperCase();
  if (upper === '') return 'USER';
  if (upper === 'USER' || upper === 'ADMIN') return upper;
  ctx.addIssue({ code: 'custom', message: `${show(value)} is not a role; use USER or ADMIN (or leave it empty for USER)` });
  return z.NEVER;
});

const platformUserId = text.transform((value, ctx): string | undefined => {
  if (value === '') return undefined;
  const id = normaliseGuid(value);
  if (id === undefined) {
    ctx.addIssue({ code: 'custom', message: `${show(value)} is not a GUID` });
    return z.NEVER;
  }
  return id;
});

/** Validates one record whose keys are feed fields (after `--map`). */
export const feedRecordSchema = z.object({
  employee_id: employeeId,
  email,
  first_name: name,
  last_name: name,
  status,
  groups,
  role,
  organisation_identifier: text,
  platform_user_id: platformUserId,
});

export type FeedRecord = Partial<Record<FeedField, unknown>>;

export type RowCheck =
  | { ok: true; row: Omit<FeedRow, 'line'> }
  | { ok: false; problems: { field: FeedField; reason: string; value?: string }[] };

/** Turns one raw record into a FeedRow, or the list of its bad fields. */
export function checkRecord(record: FeedRecord): RowCheck {
  // Every field present: zod 4 treats a transformed schema as required, and an absent column means "empty".
  const full: Record<string, unknown> = {};
  for (const field of FEED_FIELDS) full[field] = record[field] ?? '';
  const parsed = feedRecordSchema.safeParse(full);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => {
      const field = String(issue.path[0] ?? 'employee_id') as FeedField;
      const raw = asText(record[field]);
      return { field, reason: issue.message, ...(raw === undefined ? {} : { value: raw.slice(0, 60) }) };
    });
    return { ok: false, problems };
  }
  const r = parsed.data;
  const row: Omit<FeedRow, 'line'> = {
    employeeId: r.employee_id,
    email: r.email.toLowerCase(),
    emailDisplay: r.email,
    firstName: r.first_name,
    lastName: r.last_name,
    status: r.status,
    groups: r.groups,
    role: r.role,
    organisationIdentifier: r.organisation_identifier === '' ? r.employee_id : r.organisation_identifier,
  };
  if (r.platform_user_id !== undefined) row.platformUserId = r.platform_user_id;
  return { ok: true, row };
}

/** The keys of a record that failed, when they can be read, so it is never taken for a leaver. */
export function readableKeys(record: FeedRecord): { employeeId?: string; email?: string } {
  const id = asText(record.employee_id)?.trim();
  const mail = asText(record.email)?.trim().toLowerCase();
  return { ...(id ? { employeeId: id } : {}), ...(mail ? { email: mail } : {}) };
}

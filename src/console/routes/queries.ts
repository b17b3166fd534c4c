import { z } from 'zod';

/**
 * What the console's pages read from a query string or a form, as zod schemas: pages, filters,
 * ids, the organisation a change names, a decision's fields. A filter a page cannot use is its
 * 400 page (kit.ts), never a fault.
 */

export const PAGE_SIZE = 50;
/** The Provisioning page holds four lists: each paged short, so the page stays readable (its own page parameter each). */
export const PROVISIONING_PAGE_SIZE = 20;
const pageNumber = z.coerce.number().int().min(1).max(100_000).catch(1);
/** Postgres text cannot hold NUL: a filter carrying one is the page's 400, never a fault in the query. */
const noNul = (v: string) => !v.includes('\u0000');
const text = z.string().trim().max(200).refine(noNul, 'a filter cannot hold a NUL character').optional().transform((v) => (v ? v : undefined));
export const listQuery = z.object({
  page: pageNumber,
  rpage: pageNumber,
  /** The Provisioning page's other lists: held plans, feeds, console changes. */
  hpage: pageNumber,
  fpage: pageNumber,
  cpage: pageNumber,
  resource: text,
  status: text,
  who: text,
  /** Checked on its own (dayOf): a bad day is answered 400 with why, never silently dropped. */
  day: z.unknown().optional(),
  outcome: text,
  by: text,
  group: z.string().max(300).refine(noNul, 'a filter cannot hold a NUL character').optional(),
  feed: z.string().regex(/^[0-9a-f]{64}$/).optional().catch(undefined),
});
/** The `day` filter alone, read first: a bad one is answered with why, whatever else the query holds. */
export const dayQuery = z.object({ day: z.unknown() }).catch({ day: undefined });
/** A change's form may name the organisation of the row it acts on. */
export const orgField = z.object({ org: z.string().max(40).optional() }).catch({});
export const idParam = z.object({ id: z.coerce.number().int().positive() });
/** A decision's form: the typed count of people who will lose access (approve), a reason (reject). */
export const decisionFields = z
  .object({ confirm: z.string().max(20).optional(), reason: z.string().trim().max(200).optional().transform((v) => (v ? v : undefined)) })
  .catch({ confirm: undefined, reason: undefined });

/**
 * A day filter's value: empty means none; otherwise a real calendar day as YYYY-MM-DD
 * (what the field shows whatever the browser's locale), or why not, for a 400 page.
 */
export function dayOf(raw: unknown): { ok: true; day: string | undefined } | { ok: false; message: string } {
  if (raw === undefined || raw === '') return { ok: true, day: undefined };
  const shown = typeof raw === 'string' ? raw.slice(0, 40) : undefined;
  const text = typeof raw === 'string' ? raw.trim() : undefined;
  const match = text === undefined ? null : /^(\d{4})-(\d{2})-(\d{2})$/.exec(text);
  if (text !== undefined && match) {
    const [year, month, date] = [Number(match[1]), Number(match[2]), Number(match[3])];
    const at = new Date(Date.UTC(year, month - 1, date));
    if (year >= 1900 && at.getUTCFullYear() === year && at.getUTCMonth() === month - 1 && at.getUTCDate() === date) return { ok: true, day: text };
  }
  return {
    ok: false,
    message: shown === undefined
      ? 'The day filter was given more than once: give one day, as YYYY-MM-DD (for example 2026-12-07).'
      : `The day filter "${shown}" is not a day: write it as YYYY-MM-DD (for example 2026-12-07), a real date from 1900 on, in UTC.`,
  };
}

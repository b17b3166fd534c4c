/**
 * Calendar dates as HR exports write them, by a format such as `d-M-yyyy`,
 * `dd/MM/yyyy` or `yyyy-MM-dd`. Strict: the whole value must match, and the day must
 * exist (31-4-2024 is refused, not rolled over into May). The result is a calendar day
 * `YYYY-MM-DD` with no time zone: an end date is a day in the HR system, compared
 * with today's UTC day. Hand-written rather than a date library's parse: five tokens,
 * and libraries parse into local-time instants, which is what must be avoided here.
 */
import { calendarDay } from '../../lib/calendar-day.ts';

/** Tokens, longest first so `dd` wins over `d`. */
const TOKENS = [
  ['yyyy', 'year', '(\\d{4})'],
  ['MM', 'month', '(\\d{2})'],
  ['M', 'month', '(\\d{1,2})'],
  ['dd', 'day', '(\\d{2})'],
  ['d', 'day', '(\\d{1,2})'],
] as const;

type Part = (typeof TOKENS)[number][1];

export interface DateFormat {
  /** The format as written, e.g. `d-M-yyyy`. */
  pattern: string;
  /** The day `YYYY-MM-DD`, or undefined when the value does not match or names no real day. */
  parse(value: string): string | undefined;
  /** 5 March 2024 written in this format, for messages. */
  example: string;
}


/** Compiles a format; throws an Error saying what is wrong with it and what is allowed. */
export function compileDateFormat(pattern: string): DateFormat {
  let source = '^';
  let example = '';
  const order: Part[] = [];
  for (let at = 0; at < pattern.length; ) {
    const token = TOKENS.find(([t]) => pattern.startsWith(t, at));
    if (token !== undefined) {
      const [text, part, regex] = token;
      if (order.includes(part)) throw new Error(`${JSON.stringify(pattern)} names the ${part} twice`);
      order.push(part);
      source += regex;
      example += part === 'year' ? '2024' : part === 'month' ? (text === 'MM' ? '03' : '3') : text === 'dd' ? '05' : '5';
      at += text.length;
      continue;
    }
    const c = pattern[at]!;
    if (/[A-Za-z0-9]/.test(c)) {
      throw new Error(`${JSON.stringify(pattern)} has ${JSON.stringify(c)}, which is not a date token; use d or dd (day), M or MM (month), yyyy (year), separated by - / . or a space`);
    }
    source += c.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    example += c;
    at += 1;
  }
  const missing = (['day', 'month', 'year'] as const).filter((p) => !order.includes(p));
  if (missing.length > 0) throw new Error(`${JSON.stringify(pattern)} has no ${missing.join(' or ')}; e.g. d-M-yyyy, dd/MM/yyyy or yyyy-MM-dd`);
  const regex = new RegExp(`${source}$`);
  return {
    pattern,
    example,
    parse(value: string): string | undefined {
      const m = regex.exec(value.trim());
      if (!m) return undefined;
      const got: Record<Part, number> = { year: 0, month: 0, day: 0 };
      order.forEach((part, i) => (got[part] = Number(m[i + 1])));
      // The same check as every typed date (`--since`, TRAINSYNC_RESULTS_EPOCH).
      return calendarDay(got.year, got.month, got.day);
    },
  };
}

/** Today's UTC calendar day, `YYYY-MM-DD`. */
export function utcToday(now: Date = new Date()): string {
  return now.toISOString().slice(0, 10);
}

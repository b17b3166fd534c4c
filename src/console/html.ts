import { utcText } from './time.ts';

/**
 * Server-rendered HTML: every interpolated value is escaped unless it is already `SafeHtml`
 * (the output of `html` itself), so a value from the warehouse or a feed can never become markup.
 */
export class SafeHtml {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

type Interpolated = SafeHtml | string | number | boolean | null | undefined | Date | readonly Interpolated[];

function render(value: Interpolated): string {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof SafeHtml) return value.text;
  if (Array.isArray(value)) {
    // Concatenated, not joined: the parts stay a rope that is flattened once, when the page is sent.
    let out = '';
    for (const item of value as readonly Interpolated[]) out += render(item);
    return out;
  }
  // Every moment reads the same on every page (time.ts); digits, dashes and colons: nothing to escape.
  if (value instanceof Date) return utcText(value);
  if (typeof value === 'number') return String(value);
  return escapeHtml(String(value));
}

export function html(strings: TemplateStringsArray, ...values: Interpolated[]): SafeHtml {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += render(values[i]!) + strings[i + 1]!;
  return new SafeHtml(out);
}

/** A query string from parts (undefined/empty dropped), for links that keep filters. */
export function query(params: Record<string, string | number | undefined>): string {
  const search = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') search.set(k, String(v));
  const text = search.toString();
  return text ? `?${text}` : '';
}

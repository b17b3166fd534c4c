import { html, type SafeHtml } from '../html.ts';
import { dateOf, relativeText, utcText } from '../time.ts';

export function seconds(value: number | null): string {
  if (value === null) return '—';
  return value < 60 ? `${value.toFixed(1)} s` : `${(value / 60).toFixed(1)} min`;
}

export function statusBadge(status: string): SafeHtml {
  return html`<span class="badge ${status.replace(/[^a-z-]/g, '')}">${status}</span>`;
}

/**
 * A moment as every page shows it (time.ts): UTC to the minute, the exact instant in the
 * element's datetime and tooltip; with `now`, also how far away (`in 3 h`, `5 min ago`).
 * `fallback` when there is none.
 */
export function when(value: string | Date | null | undefined, now?: Date, fallback: SafeHtml | string = html`&mdash;`): SafeHtml {
  const at = dateOf(value);
  if (!at) return typeof fallback === 'string' ? html`${fallback}` : fallback;
  const iso = at.toISOString();
  return html`<time datetime="${iso}" title="${iso}">${utcText(at)}</time>${now ? html` <span class="relative">(${relativeText(at, now)})</span>` : ''}`;
}

/** Data for a chart, handed to /assets/charts.js in a data attribute (never an inline script). */
/** `dual`: the first series on the left axis (e.g. seconds), the others on a right one (counts). `x` in epoch seconds, drawn in UTC. */
export function chart(id: string, series: { labels: string[]; x: number[]; ys: number[][]; dual?: boolean }): SafeHtml {
  return html`<div class="chart" id="${id}" data-chart="${JSON.stringify(series)}"></div>`;
}

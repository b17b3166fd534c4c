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

/** One series of a chart: its values (null where a point is not of this series), its axis, and how it is drawn. */
export interface ChartSeries {
  label: string;
  values: Array<number | null>;
  /** 'y': the left axis; 'y2': the right one. */
  axis: 'y' | 'y2';
  /** 'line': points joined (only to points of the same series); 'points': each point alone, never joined. */
  draw: 'line' | 'points';
  /** A CSS colour; dashed lines for a second quantity of the same runs. */
  color: string;
  dash?: boolean;
}

/** A chart's data: `x` in epoch seconds (drawn in UTC), each axis labelled with its unit. */
export interface ChartSpec {
  x: number[];
  series: ChartSeries[];
  axes: { x: string; y: string; y2?: string };
}

/** Data for a chart, handed to /assets/charts.js in a data attribute (never an inline script). */
export function chart(id: string, spec: ChartSpec): SafeHtml {
  return html`<div class="chart" id="${id}" data-chart="${JSON.stringify(spec)}"></div>`;
}

/**
 * A day filter: a text field that takes and shows YYYY-MM-DD whatever the browser's locale
 * (a date input shows mm/dd/yyyy in an American one); the server checks it again (400).
 */
export function dayInput(value: string | undefined, label: string): SafeHtml {
  return html`<label>${label} <input name="day" id="day" value="${value ?? ''}" placeholder="YYYY-MM-DD" pattern="[0-9]{4}-[0-9]{2}-[0-9]{2}" inputmode="numeric" maxlength="10" size="10" title="a day as YYYY-MM-DD, in UTC"></label>`;
}

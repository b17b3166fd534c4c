import { html, type SafeHtml } from '../html.ts';

export function seconds(value: number | null): string {
  if (value === null) return '—';
  return value < 60 ? `${value.toFixed(1)} s` : `${(value / 60).toFixed(1)} min`;
}

export function statusBadge(status: string): SafeHtml {
  return html`<span class="badge ${status.replace(/[^a-z-]/g, '')}">${status}</span>`;
}

/** Data for a chart, handed to /assets/charts.js in a data attribute (never an inline script). */
/** `dual`: the first series on the left axis (e.g. seconds), the others on a right one (counts). */
export function chart(id: string, series: { labels: string[]; x: number[]; ys: number[][]; dual?: boolean }): SafeHtml {
  return html`<div class="chart" id="${id}" data-chart="${JSON.stringify(series)}"></div>`;
}

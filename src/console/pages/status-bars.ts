import { html, type SafeHtml } from '../html.ts';

/**
 * A horizontal stacked bar chart drawn on the server as SVG: one bar per category (a
 * course, a department), one segment per status. Categories have no order or distance
 * between them, so a line through them (uPlot's default) said nothing; bars need no script,
 * and the CSP's `style-src 'self'` is kept: geometry is SVG attributes, colours are classes
 * in console.css. Each segment links to the people behind it and names its count in a
 * <title> (a tooltip, and what a screen reader says); the table under the chart has every figure.
 */

export interface BarGroup {
  label: string;
  /** Count per status key (missing: 0). */
  counts: Readonly<Record<string, number>>;
}

export interface BarOptions {
  id: string;
  /** Status keys in stacking order; each has a class `st-<key>` in console.css. */
  keys: readonly string[];
  title: string;
  /** Where a segment links to. */
  href: (group: string, key: string) => string;
  /** Bars drawn at most (the rest are in the table). */
  max?: number;
}

const LABEL_W = 230;
const BAR_W = 560;
const TOTAL_W = 70;
const ROW_H = 26;
const BAR_H = 18;
const LABEL_CHARS = 34;

const short = (label: string): string => (label.length > LABEL_CHARS ? `${label.slice(0, LABEL_CHARS - 1)}…` : label);
const cls = (key: string): string => `st-${key.replace(/[^a-z_-]/gi, '')}`;
/** A segment's width: proportional to its count, the largest bar full width (to a hundredth of a unit). */
export const segmentWidth = (n: number, largest: number): number => (largest > 0 ? Math.round((n / largest) * BAR_W * 100) / 100 : 0);

export function statusBars(groups: readonly BarGroup[], options: BarOptions): SafeHtml {
  const drawn = groups.slice(0, options.max ?? 30);
  const total = (g: BarGroup): number => options.keys.reduce((sum, k) => sum + (g.counts[k] ?? 0), 0);
  const largest = Math.max(0, ...drawn.map(total));
  const width = LABEL_W + BAR_W + TOTAL_W;
  const height = drawn.length * ROW_H + 4;
  const rows = drawn.map((g, i) => {
    const y = i * ROW_H + 4;
    let x = LABEL_W;
    const segments = options.keys.map((key) => {
      const n = g.counts[key] ?? 0;
      if (n === 0) return html``;
      const w = segmentWidth(n, largest);
      const rect = html`<a href="${options.href(g.label, key)}"><rect class="${cls(key)}" data-status="${key}" data-count="${n}" x="${x}" y="${y}" width="${w}" height="${BAR_H}"><title>${g.label}: ${key} ${n}</title></rect></a>`;
      x += w;
      return rect;
    });
    return html`<g class="bar" data-group="${g.label}"><text class="label" x="${LABEL_W - 8}" y="${y + BAR_H - 4}" text-anchor="end"><title>${g.label}</title>${short(g.label)}</text>${segments}<text class="total" x="${x + 6}" y="${y + BAR_H - 4}">${total(g)}</text></g>`;
  });
  return html`<figure class="bars" id="${options.id}">
<figcaption>${options.title}${groups.length > drawn.length ? ` (the first ${drawn.length} of ${groups.length}; all in the table)` : ''}</figcaption>
<ul class="legend">${options.keys.map((k) => html`<li><span class="swatch ${cls(k)}"></span>${k}</li>`)}</ul>
<svg role="img" aria-label="${options.title}" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" xmlns="http://www.w3.org/2000/svg">${rows}</svg>
</figure>`;
}

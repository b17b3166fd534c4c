import { html, type SafeHtml } from '../html.ts';
import { orgCell, orgHeader, pager, type Viewer } from '../layout.ts';
import type { AttemptRow, QuarantinedRow, RunPoint, RunRow } from '../data/runs.ts';
import { chart, dayInput, seconds, statusBadge, when, type ChartSeries, type ChartSpec } from './format.ts';

export const RUN_STATUSES = ['running', 'succeeded', 'incomplete', 'failed', 'cancelled'] as const;

const MODE_COLOURS: Record<string, string> = { full: '#2f6fdf', incremental: '#3a9d5d' };
/** Runs that did not end well: each a point of its own colour, never joined to the others. */
const OUTCOME_POINTS: ReadonlyArray<readonly [string, string]> = [['incomplete', '#e0a526'], ['failed', '#c23b3b'], ['cancelled', '#6b7280']];

/**
 * The runs chart: succeeded runs as lines, one per mode (full and incremental runs differ in
 * kind, so never joined), their duration on the left axis and their rows (dashed) on the right;
 * incomplete, failed and cancelled runs as points of their own at their duration.
 */
export function runChartSpec(points: readonly RunPoint[]): ChartSpec {
  const only = (keep: (p: RunPoint) => boolean, value: (p: RunPoint) => number): Array<number | null> => points.map((p) => (keep(p) ? value(p) : null));
  const modes = [...new Set(points.filter((p) => p.status === 'succeeded').map((p) => p.mode ?? 'other'))].sort();
  const series: ChartSeries[] = [];
  for (const mode of modes) {
    const color = MODE_COLOURS[mode] ?? '#7a5cc2';
    const ofMode = (p: RunPoint): boolean => p.status === 'succeeded' && (p.mode ?? 'other') === mode;
    series.push({ label: `${mode}: duration`, values: only(ofMode, (p) => p.seconds), axis: 'y', draw: 'line', color });
    series.push({ label: `${mode}: rows`, values: only(ofMode, (p) => p.rows), axis: 'y2', draw: 'line', color, dash: true });
  }
  for (const [status, color] of OUTCOME_POINTS) {
    if (points.some((p) => p.status === status)) series.push({ label: status, values: only((p) => p.status === status, (p) => p.seconds), axis: 'y', draw: 'points', color });
  }
  return { x: points.map((p) => p.t), series, axes: { x: 'run start (UTC)', y: 'duration (s)', y2: 'rows read (count)' } };
}

/** A run's error in the list: its first line, cut short (the run's page has all of it). */
function errorCell(error: string | null): SafeHtml {
  if (!error) return html`<td class="run-error"></td>`;
  const line = error.split('\n')[0]!;
  const short = line.length > 160 ? `${line.slice(0, 157)}…` : line;
  return html`<td class="run-error" title="${error}">${short}</td>`;
}

export function runsBody(viewer: Viewer, d: {
  runs: RunRow[];
  hasMore: boolean;
  page: number;
  resources: string[];
  resource: string | undefined;
  status: string | undefined;
  day: string | undefined;
  series: RunPoint[] | undefined;
}): SafeHtml {
  return html`
<form method="get" action="/runs" class="filters">
<label>resource <select name="resource"><option value="">all</option>${d.resources.map((r) => html`<option value="${r}" ${r === d.resource ? html`selected` : ''}>${r}</option>`)}</select></label>
<label>status <select name="status"><option value="">all</option>${RUN_STATUSES.map((s) => html`<option value="${s}" ${s === d.status ? html`selected` : ''}>${s}</option>`)}</select></label>
${dayInput(d.day, 'started on (UTC)')}
<button type="submit">Filter</button></form>
${d.series && d.series.length > 0
    ? html`<h2>${d.resource}: duration and rows read per run (UTC)</h2>${chart('runs-chart', runChartSpec(d.series))}`
    : d.resource ? (d.series === undefined ? html`<p id="chart-choose-org">The chart shows one organisation's runs: choose one with the selector above.</p>` : '') : html`<p>Pick a resource to chart its duration and rows over time.</p>`}
<div class="wide"><table id="runs"><tr><th>run</th>${orgHeader(viewer)}<th>resource</th><th>mode</th><th>status</th><th>attempts</th><th>started</th><th>duration</th><th>rows</th><th>requests</th><th>inserted</th><th>updated</th><th>quarantined</th><th>removed</th><th>error</th></tr>
${d.runs.map((r) => html`<tr><td><a href="/runs/${r.id}">#${r.id}</a></td>${orgCell(viewer, r.org)}<td>${r.resource}</td><td>${r.mode ?? ''}</td><td>${statusBadge(r.status)}</td><td class="attempts">${r.attempts}</td><td>${when(r.started_at)}</td><td>${seconds(r.seconds)}</td><td>${r.rows}</td><td>${r.requests}</td><td>${r.inserted}</td><td>${r.updated}</td><td><a href="/runs/${r.id}#quarantine">${r.quarantined}</a></td><td>${r.removed}</td>${errorCell(r.error)}</tr>`)}
</table></div>
${d.runs.length === 0 ? html`<p id="no-runs">No runs${d.status || d.day || d.resource ? ' match these filters' : ' yet'}.</p>` : ''}
${pager('/runs', d.page, d.hasMore, { resource: d.resource, status: d.status, day: d.day })}`;
}

export function runBody(viewer: Viewer, run: RunRow & { attemptRows: AttemptRow[] }, quarantined: QuarantinedRow[], windows: Array<{ window_key: string; reason: string; recorded_at: Date }>): SafeHtml {
  return html`
<dl class="counts">
${viewer.scope.multi ? html`<dt>organisation</dt><dd id="run-org">${run.org}</dd>` : ''}<dt>resource</dt><dd>${run.resource}</dd><dt>status</dt><dd>${statusBadge(run.status)}</dd><dt>mode</dt><dd>${run.mode ?? ''}</dd>
<dt>started</dt><dd>${when(run.started_at)}</dd><dt>finished</dt><dd>${when(run.finished_at)}</dd><dt>duration</dt><dd>${seconds(run.seconds)}</dd>
<dt>pages</dt><dd>${run.pages}</dd><dt>requests</dt><dd>${run.requests}</dd><dt>inserted</dt><dd>${run.inserted}</dd><dt>updated</dt><dd>${run.updated}</dd><dt>unchanged</dt><dd>${run.unchanged}</dd>
<dt>quarantined</dt><dd>${run.quarantined}</dd><dt>removed</dt><dd>${run.removed}</dd><dt>attempts</dt><dd id="run-attempts">${run.attempts}</dd>
${run.error ? html`<dt>error</dt><dd id="run-error">${run.error}</dd>` : ''}${run.note ? html`<dt>note</dt><dd>${run.note}</dd>` : ''}
</dl>
${run.attempts > 1 ? html`<h2>Attempts</h2><p>The job was tried ${run.attempts} times; the counts above add up every attempt.</p>
<div class="wide"><table id="attempts"><tr><th>attempt</th><th>status</th><th>started</th><th>duration</th><th>error</th></tr>
${run.attemptRows.map((a, i) => html`<tr><td>${i + 1} <small>(#${a.id})</small></td><td>${statusBadge(a.status)}</td><td>${when(a.started_at)}</td><td>${seconds(a.seconds)}</td><td class="run-error">${a.error ?? ''}</td></tr>`)}</table></div>` : ''}
<h2>Unfinished windows</h2>
${windows.length === 0 ? html`<p>None.</p>` : html`<table><tr><th>window</th><th>reason</th><th>recorded</th></tr>${windows.map((w) => html`<tr><td>${w.window_key}</td><td>${w.reason}</td><td>${when(w.recorded_at)}</td></tr>`)}</table>`}
<h2>Quarantined records</h2>
${quarantined.length === 0 ? html`<p>None.</p>` : html`<table id="quarantine"><tr><th>#</th><th>reason</th><th>page</th><th>record (raw, first 400 characters)</th><th>seen</th></tr>
${quarantined.map((q) => html`<tr><td>${q.id}</td><td class="reason">${q.message}</td><td>${q.page ?? ''}</td><td><code>${q.raw_text}</code></td><td>${q.times_seen}</td></tr>`)}</table>`}`;
}

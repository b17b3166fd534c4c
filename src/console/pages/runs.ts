import { html, type SafeHtml } from '../html.ts';
import { orgCell, orgHeader, pager, type Viewer } from '../layout.ts';
import type { QuarantinedRow, RunRow } from '../data/runs.ts';
import { chart, seconds, statusBadge, when } from './format.ts';

const RUN_STATUSES = ['running', 'succeeded', 'incomplete', 'failed', 'cancelled'];

export function runsBody(viewer: Viewer, d: {
  runs: RunRow[];
  hasMore: boolean;
  page: number;
  resources: string[];
  resource: string | undefined;
  status: string | undefined;
  series: Array<{ t: number; seconds: number; rows: number; requests: number }> | undefined;
}): SafeHtml {
  return html`
<form method="get" action="/runs" class="filters">
<label>resource <select name="resource"><option value="">all</option>${d.resources.map((r) => html`<option value="${r}" ${r === d.resource ? html`selected` : ''}>${r}</option>`)}</select></label>
<label>status <select name="status"><option value="">all</option>${RUN_STATUSES.map((s) => html`<option value="${s}" ${s === d.status ? html`selected` : ''}>${s}</option>`)}</select></label>
<button type="submit">Filter</button></form>
${d.series && d.series.length > 0
    ? html`<h2>${d.resource}: duration, rows and requests over time (UTC)</h2>${chart('runs-chart', { labels: ['duration (s)', 'rows', 'requests'], x: d.series.map((p) => p.t), ys: [d.series.map((p) => p.seconds), d.series.map((p) => p.rows), d.series.map((p) => p.requests)], dual: true })}`
    : d.resource ? (d.series === undefined ? html`<p id="chart-choose-org">The chart shows one organisation's runs: choose one with the selector above.</p>` : '') : html`<p>Pick a resource to chart its duration and rows over time.</p>`}
<table id="runs"><tr><th>run</th>${orgHeader(viewer)}<th>resource</th><th>mode</th><th>status</th><th>started</th><th>duration</th><th>rows</th><th>requests</th><th>inserted</th><th>updated</th><th>quarantined</th><th>removed</th></tr>
${d.runs.map((r) => html`<tr><td><a href="/runs/${r.id}">#${r.id}</a></td>${orgCell(viewer, r.org)}<td>${r.resource}</td><td>${r.mode ?? ''}</td><td>${statusBadge(r.status)}</td><td>${when(r.started_at)}</td><td>${seconds(r.seconds)}</td><td>${r.rows}</td><td>${r.requests}</td><td>${r.inserted}</td><td>${r.updated}</td><td><a href="/runs/${r.id}#quarantine">${r.quarantined}</a></td><td>${r.removed}</td></tr>`)}
</table>
${pager('/runs', d.page, d.hasMore, { resource: d.resource, status: d.status })}`;
}

export function runBody(viewer: Viewer, run: RunRow, quarantined: QuarantinedRow[], windows: Array<{ window_key: string; reason: string; recorded_at: Date }>): SafeHtml {
  return html`
<dl class="counts">
${viewer.scope.multi ? html`<dt>organisation</dt><dd id="run-org">${run.org}</dd>` : ''}<dt>resource</dt><dd>${run.resource}</dd><dt>status</dt><dd>${statusBadge(run.status)}</dd><dt>mode</dt><dd>${run.mode ?? ''}</dd>
<dt>started</dt><dd>${when(run.started_at)}</dd><dt>finished</dt><dd>${when(run.finished_at)}</dd><dt>duration</dt><dd>${seconds(run.seconds)}</dd>
<dt>pages</dt><dd>${run.pages}</dd><dt>requests</dt><dd>${run.requests}</dd><dt>inserted</dt><dd>${run.inserted}</dd><dt>updated</dt><dd>${run.updated}</dd><dt>unchanged</dt><dd>${run.unchanged}</dd>
<dt>quarantined</dt><dd>${run.quarantined}</dd><dt>removed</dt><dd>${run.removed}</dd>
${run.error ? html`<dt>error</dt><dd>${run.error}</dd>` : ''}${run.note ? html`<dt>note</dt><dd>${run.note}</dd>` : ''}
</dl>
<h2>Unfinished windows</h2>
${windows.length === 0 ? html`<p>None.</p>` : html`<table><tr><th>window</th><th>reason</th><th>recorded</th></tr>${windows.map((w) => html`<tr><td>${w.window_key}</td><td>${w.reason}</td><td>${when(w.recorded_at)}</td></tr>`)}</table>`}
<h2>Quarantined records</h2>
${quarantined.length === 0 ? html`<p>None.</p>` : html`<table id="quarantine"><tr><th>#</th><th>reason</th><th>page</th><th>record (raw, first 400 characters)</th><th>seen</th></tr>
${quarantined.map((q) => html`<tr><td>${q.id}</td><td class="reason">${q.message}</td><td>${q.page ?? ''}</td><td><code>${q.raw_text}</code></td><td>${q.times_seen}</td></tr>`)}</table>`}`;
}

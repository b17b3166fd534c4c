import { html, type SafeHtml } from '../html.ts';
import { pager } from '../layout.ts';
import type { WebhookBacklog } from '../../webhooks/store.ts';
import type { EventRow } from '../data/webhooks.ts';
import type { RefusalRow } from '../../webhooks/refusals.ts';
import { statusBadge } from './format.ts';

export interface RefusalsView {
  rows: RefusalRow[];
  hasMore: boolean;
  lastDay: number;
  page: number;
}

export function webhooksBody(backlog: WebhookBacklog, events: EventRow[], hasMore: boolean, page: number, outcome: string | undefined, refusals: RefusalsView): SafeHtml {
  return html`
<dl class="counts"><dt>last event</dt><dd>${backlog.lastEventType ?? 'none'} ${backlog.lastReceivedAt ?? ''}</dd>
<dt>backlog (not yet processed)</dt><dd><a href="/webhooks?outcome=waiting">${backlog.waiting}</a>${backlog.oldestWaitingSince ? html`, oldest since ${backlog.oldestWaitingSince}` : ''}</dd>
<dt>last 24 hours</dt><dd>${Object.entries(backlog.lastDay).map(([k, n]) => html`<a href="/webhooks?outcome=${k}">${k}: ${n}</a> `)}</dd>
<dt>signature failures, last 24 hours</dt><dd><a href="#refusals">${refusals.lastDay}</a></dd></dl>
<table id="events"><tr><th>received</th><th>type</th><th>event</th><th>outcome</th><th>processed</th><th>error</th></tr>
${events.map((e) => html`<tr><td>${e.received_at}</td><td>${e.event_type}</td><td>${e.event_id}</td><td>${statusBadge(e.outcome ?? 'waiting')}</td><td>${e.processed_at ?? ''}</td><td>${e.error ?? ''}</td></tr>`)}</table>
${pager('/webhooks', page, hasMore, { outcome, rpage: refusals.page > 1 ? String(refusals.page) : undefined })}
<h2>Signature failures</h2>
<p>Deliveries refused (401) for a missing or invalid signature: when, which header was checked, who sent it. Their bodies are never kept.</p>
<table id="refusals"><tr><th>refused</th><th>reason</th><th>header</th><th>remote address</th></tr>
${refusals.rows.map((r) => html`<tr><td>${r.refused_at}</td><td>${statusBadge(r.reason === 'missing' ? 'signature missing' : 'signature invalid')}</td><td>${r.header}</td><td>${r.remote ?? ''}</td></tr>`)}</table>
${refusals.rows.length === 0 ? html`<p>No refused delivery.</p>` : ''}
${pager('/webhooks', refusals.page, refusals.hasMore, { outcome, page: page > 1 ? String(page) : undefined }, 'rpage')}`;
}

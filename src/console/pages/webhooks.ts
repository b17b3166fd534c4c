import { html, type SafeHtml } from '../html.ts';
import { orgCell, orgHeader, pager, type Viewer } from '../layout.ts';
import type { RefusalCountRow, RefusalRow, WebhookBacklog } from '../../webhooks/index.ts';
import type { EventRow } from '../data/webhooks.ts';
import { statusBadge, when } from './format.ts';

const REFUSAL_LABELS: Record<string, string> = { missing: 'signature missing', invalid: 'signature invalid', 'organisation-mismatch': 'organisation mismatch' };

export interface RefusalsView {
  rows: RefusalRow[];
  hasMore: boolean;
  lastDay: number;
  /** Signature refusals, counted per minute (the newest). */
  perMinute: RefusalCountRow[];
  page: number;
}

export function webhooksBody(viewer: Viewer, backlog: WebhookBacklog, events: EventRow[], hasMore: boolean, page: number, outcome: string | undefined, refusals: RefusalsView, now: Date): SafeHtml {
  return html`
<dl class="counts"><dt>last event</dt><dd>${backlog.lastEventType ?? 'none'} ${when(backlog.lastReceivedAt, now, '')}</dd>
<dt>backlog (not yet processed)</dt><dd><a href="/webhooks?outcome=waiting">${backlog.waiting}</a>${backlog.oldestWaitingSince ? html`, oldest since ${when(backlog.oldestWaitingSince, now)}` : ''}</dd>
<dt>last 24 hours</dt><dd>${Object.entries(backlog.lastDay).map(([k, n]) => html`<a href="/webhooks?outcome=${k}">${k}: ${n}</a> `)}</dd>
<dt>signature failures, last 24 hours</dt><dd><a href="#refusals">${refusals.lastDay}</a></dd></dl>
<table id="events"><tr>${orgHeader(viewer)}<th>received</th><th>type</th><th>event</th><th>outcome</th><th>processed</th><th>error</th></tr>
${events.map((e) => html`<tr>${orgCell(viewer, e.org)}<td>${when(e.received_at)}</td><td>${e.event_type}</td><td>${e.event_id}</td><td>${statusBadge(e.outcome ?? 'waiting')}</td><td>${when(e.processed_at, undefined, '')}</td><td>${e.error ?? ''}</td></tr>`)}</table>
${pager('/webhooks', page, hasMore, { outcome, rpage: refusals.page > 1 ? String(refusals.page) : undefined })}
<h2>Refused deliveries</h2>
<p>Deliveries refused for a missing or invalid signature (401; another organisation's secret is invalid here): anyone can send one, so they are counted per minute, not kept one by one. Their bodies are never kept.</p>
<table id="refusal-counts"><tr>${orgHeader(viewer)}<th>minute</th><th>reason</th><th>refused</th><th>header</th><th>last remote address</th></tr>
${refusals.perMinute.map((c) => html`<tr>${orgCell(viewer, c.org)}<td>${when(c.minute)}</td><td>${statusBadge(REFUSAL_LABELS[c.reason] ?? c.reason)}</td><td>${c.refusals}</td><td>${c.header}</td><td>${c.last_remote ?? ''}</td></tr>`)}</table>
<p>Deliveries signed with the organisation's secret but refused (403: naming another organisation's GUID, or none while several organisations are configured), one row each: when, which header was checked, who sent it.</p>
<table id="refusals"><tr>${orgHeader(viewer)}<th>refused</th><th>reason</th><th>header</th><th>remote address</th><th>detail</th></tr>
${refusals.rows.map((r) => html`<tr>${orgCell(viewer, r.org)}<td>${when(r.refused_at)}</td><td>${statusBadge(REFUSAL_LABELS[r.reason] ?? r.reason)}</td><td>${r.header}</td><td>${r.remote ?? ''}</td><td>${r.detail ?? ''}</td></tr>`)}</table>
${refusals.rows.length === 0 ? html`<p>No refused delivery.</p>` : ''}
${pager('/webhooks', refusals.page, refusals.hasMore, { outcome, page: page > 1 ? String(page) : undefined }, 'rpage')}`;
}

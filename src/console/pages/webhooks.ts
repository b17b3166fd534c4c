import { html, type SafeHtml } from '../html.ts';
import { pager } from '../layout.ts';
import type { WebhookBacklog } from '../../webhooks/store.ts';
import type { EventRow } from '../data/webhooks.ts';
import { statusBadge } from './format.ts';

export function webhooksBody(backlog: WebhookBacklog, events: EventRow[], hasMore: boolean, page: number, outcome: string | undefined): SafeHtml {
  return html`
<dl class="counts"><dt>last event</dt><dd>${backlog.lastEventType ?? 'none'} ${backlog.lastReceivedAt ?? ''}</dd>
<dt>backlog (not yet processed)</dt><dd>${backlog.waiting}${backlog.oldestWaitingSince ? html`, oldest since ${backlog.oldestWaitingSince}` : ''}</dd>
<dt>last 24 hours</dt><dd>${Object.entries(backlog.lastDay).map(([k, n]) => html`<a href="/webhooks?outcome=${k}">${k}: ${n}</a> `)}</dd></dl>
<p>Signature failures are never stored (nothing unsigned is kept): see <code>trainsync_webhook_signature_failures_total</code> on /metrics.</p>
<table id="events"><tr><th>received</th><th>type</th><th>event</th><th>outcome</th><th>processed</th><th>error</th></tr>
${events.map((e) => html`<tr><td>${e.received_at}</td><td>${e.event_type}</td><td>${e.event_id}</td><td>${statusBadge(e.outcome ?? 'waiting')}</td><td>${e.processed_at ?? ''}</td><td>${e.error ?? ''}</td></tr>`)}</table>
${pager('/webhooks', page, hasMore, { outcome })}`;
}

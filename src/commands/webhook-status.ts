import { sql } from 'kysely';
import { sectionOfOne, type SectionRows, type StatusSection } from './status-report.ts';

const TITLE = 'Webhook events (near-real-time results; see trainsync.webhook_events)';

/**
 * `status` section of each organisation: the last webhook event received and the backlog of
 * stored events not yet processed. Three statements for all of them; the last event is one
 * probe of the index (org, received_at desc) per organisation.
 */
export const webhookStatusAcross: StatusSection = async (db, orgs) => {
  const slugs = [...orgs];
  const [last, waiting, day] = await Promise.all([
    sql<{ org: string; event_type: string; received_at: Date }>`
      select c.slug as org, e.event_type, e.received_at from unnest(${slugs}::text[]) as c(slug)
      join lateral (select event_type, received_at from trainsync.webhook_events where org = c.slug order by received_at desc limit 1) e on true`.execute(db),
    sql<{ org: string; n: number; oldest: Date | null }>`
      select org, count(*)::int as n, min(received_at) as oldest from trainsync.webhook_events
      where org = any(${slugs}::text[]) and processed_at is null group by org`.execute(db),
    sql<{ org: string; outcome: string; n: number }>`
      select org, coalesce(outcome, 'waiting') as outcome, count(*)::int as n from trainsync.webhook_events
      where org = any(${slugs}::text[]) and received_at > now() - interval '1 day' group by org, coalesce(outcome, 'waiting')`.execute(db),
  ]);
  const waitingOf = new Map(waiting.rows.map((w) => [w.org, w]));
  const sections = new Map<string, SectionRows>(orgs.map((org) => [org, { title: TITLE, rows: [] }]));
  for (const l of last.rows) {
    const lastDay = day.rows
      .filter((d) => d.org === l.org)
      .sort((a, b) => a.outcome.localeCompare(b.outcome))
      .map((d) => `${d.outcome} ${d.n}`)
      .join(', ');
    sections.get(l.org)?.rows.push({
      'last received': l.received_at,
      'last type': l.event_type,
      'waiting (backlog)': waitingOf.get(l.org)?.n ?? 0,
      'oldest waiting since': waitingOf.get(l.org)?.oldest ?? '',
      'last 24 h by outcome': lastDay || '(none)',
    });
  }
  return sections;
};

/** The section of one organisation. */
export const webhookStatusSection = sectionOfOne(webhookStatusAcross);

import { webhookBacklogsOf } from '../../webhooks/store.ts';
import { sectionOfOne, type SectionRows, type StatusSection } from './status-report.ts';

const TITLE = 'Webhook events (near-real-time results; see trainsync.webhook_events)';

/**
 * `status` section of each organisation: the last webhook event received and the backlog of
 * stored events not yet processed. Three statements for all of them (webhookBacklogsOf).
 */
export const webhookStatusAcross: StatusSection = async (db, orgs) => {
  const { last, waiting, lastDay: day } = await webhookBacklogsOf(db, orgs);
  const waitingOf = new Map(waiting.map((w) => [w.org, w]));
  const sections = new Map<string, SectionRows>(orgs.map((org) => [org, { title: TITLE, rows: [] }]));
  for (const l of last) {
    const lastDay = day
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

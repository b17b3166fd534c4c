import { webhookBacklog } from '../webhooks/store.ts';
import type { StatusSection } from './status.ts';

/** `status` section of one organisation: the last webhook event received and the backlog of stored events not yet processed. */
export const webhookStatusSection: StatusSection = async (app, org) => {
  const backlog = await webhookBacklog(app.scopes.scope(org).db, org);
  const lastDay = Object.entries(backlog.lastDay)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([outcome, n]) => `${outcome} ${n}`)
    .join(', ');
  return {
    title: 'Webhook events (near-real-time results; see trainsync.webhook_events)',
    rows:
      backlog.lastReceivedAt === null
        ? []
        : [
            {
              'last received': backlog.lastReceivedAt,
              'last type': backlog.lastEventType,
              'waiting (backlog)': backlog.waiting,
              'oldest waiting since': backlog.oldestWaitingSince ?? '',
              'last 24 h by outcome': lastDay || '(none)',
            },
          ],
  };
};

/**
 * The webhooks wing's entry: what the other wings (the console) may use of it. Another wing
 * imports the webhooks wing through this file only (.dependency-cruiser.mjs,
 * docs/architecture.md "The rules"); the commands and jobs/ may reach further in.
 */

/** Received events and the backlog (trainsync.webhook_events). */
export { recentEvents, webhookBacklog, type EventRow, type WebhookBacklog } from './store.ts';
/** Refused deliveries (trainsync.webhook_refusals). */
export { recentRefusals, type RefusalCountRow, type RefusalRow } from './refusals.ts';

/** The console's read of webhook events: their store (src/webhooks/store.ts) owns the SQL. */
export { recentEvents, type EventRow } from '../../webhooks/index.ts';

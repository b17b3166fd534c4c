/** BullMQ queue names. Sync and provisioning are separate so a long load never delays a leaver. */
export const SYNC_QUEUE = 'sync';
export const PROVISION_QUEUE = 'provision';
/** Results named by platform webhooks: their own queue, so a nightly sync never delays them. */
export const WEBHOOK_QUEUE = 'webhooks';
export const QUEUE_NAMES = [SYNC_QUEUE, PROVISION_QUEUE, WEBHOOK_QUEUE] as const;
export type QueueName = (typeof QUEUE_NAMES)[number];

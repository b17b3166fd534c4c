/** BullMQ queue names. Sync and provisioning are separate so a long load never delays a leaver. */
export const SYNC_QUEUE = 'sync';
export const PROVISION_QUEUE = 'provision';
/** Results named by platform webhooks: their own queue, so a nightly sync never delays them. */
export const WEBHOOK_QUEUE = 'webhooks';
export const QUEUE_NAMES = [SYNC_QUEUE, PROVISION_QUEUE, WEBHOOK_QUEUE] as const;
export type QueueName = (typeof QUEUE_NAMES)[number];

/**
 * Every job name, in one place: the job files, the schedulers, `sync` and the planner
 * all take names from here, and the worker refuses to start unless each one has
 * exactly one handler in the catalog.
 */
export const JOB_NAMES = {
  syncCourses: 'sync-courses',
  syncFilters: 'sync-filters',
  syncGroups: 'sync-groups',
  syncResults: 'sync-results',
  syncSeats: 'sync-seats',
  syncUsers: 'sync-users',
  createUser: 'create-user',
  setPassword: 'set-password',
  changeGroup: 'change-group',
  setAccess: 'set-access',
  loadWebhookResult: 'load-webhook-result',
  reconcileFix: 'reconcile-fix',
} as const;
export type JobName = (typeof JOB_NAMES)[keyof typeof JOB_NAMES];

import { z } from 'zod';

/** The payload every sync job accepts; only sync-results uses the date options. */
export const syncPayloadSchema = z.object({
  trigger: z.enum(['schedule', 'cli']).default('schedule'),
  since: z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'a date as YYYY-MM-DD').optional(),
  until: z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'a date as YYYY-MM-DD').optional(),
  full: z.boolean().default(false),
});
export type SyncPayload = z.output<typeof syncPayloadSchema>;

import { z } from 'zod';
import { parseIsoDay } from '../lib/calendar-day.ts';

const day = z.string().refine((value) => parseIsoDay(value) === value, 'a date that exists, as YYYY-MM-DD');

/** The payload every sync job accepts; only sync-results uses the date options. */
export const syncPayloadSchema = z.object({
  trigger: z.enum(['schedule', 'cli']).default('schedule'),
  since: day.optional(),
  until: day.optional(),
  full: z.boolean().default(false),
});
export type SyncPayload = z.output<typeof syncPayloadSchema>;

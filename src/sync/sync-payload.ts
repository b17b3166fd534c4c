import { z } from 'zod';
import { parseIsoDay } from '../lib/calendar-day.ts';

const day = z.string().refine((value) => parseIsoDay(value) === value, 'a date that exists, as YYYY-MM-DD');

/** The payload every sync job accepts; only a windowed resource's job uses the date options and `--full`. */
export const syncPayloadSchema = z.object({
  trigger: z.enum(['schedule', 'cli']).default('schedule'),
  since: day.optional(),
  until: day.optional(),
  full: z.boolean().default(false),
});
export type SyncPayload = z.output<typeof syncPayloadSchema>;

/**
 * What the job of a resource without windows keeps of a request: the date options and
 * `--full` are the windowed engine's, so two requests that differ only there are the same
 * sync (joined, never refused as a conflict).
 */
export const unwindowedSyncPayloadSchema = syncPayloadSchema.transform(({ trigger }): SyncPayload => ({ trigger, full: false }));

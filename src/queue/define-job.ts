import type { z } from 'zod';
import type { JobContext } from './job-context.ts';
import type { QueueName } from './names.ts';

/** When a job runs by itself: every worker registers a BullMQ job scheduler for it. */
export interface JobSchedule {
  /** The variable holding its cron line (UTC), e.g. `TRAINSYNC_CRON_COURSES`; src/config.ts reads every `TRAINSYNC_CRON_*`. */
  setting: `TRAINSYNC_CRON_${string}`;
  /** The cron line while the variable is unset, e.g. `0 2 * * *`; null = off until the variable is set. */
  default: string | null;
}

export interface JobDefinition<Payload extends z.ZodType = z.ZodType, Summary = unknown> {
  name: string;
  queue: QueueName;
  payload: Payload;
  /**
   * The warehouse resource whose rows the job loads. A job of the sync queue with a
   * resource is what `sync <resource>` runs; the metrics label its row counts with it.
   */
  resource?: string;
  /** What `run` returns: the job's log line and the CLI's summary read it through this schema. */
  summary?: z.ZodType;
  /** Runs by itself on this schedule (a worker registers it). */
  schedule?: JobSchedule;
  /**
   * Jobs with the same exclusive key never run at once, across every worker process
   * (a Postgres advisory lock); a second one is put back and tried again later.
   */
  exclusive?: (payload: z.output<Payload>) => string;
  /** Attempts for transient failures (default 5), with exponential backoff. */
  attempts?: number;
  /**
   * Other code enqueues this job by its name (the planner's actions, the webhook loader)
   * rather than through the catalog: the name is shared with that code and with jobs
   * already queued. test/queue-units.test.ts holds these declarations to the names the
   * wings enqueue, both ways.
   */
  enqueuedByName?: boolean;
  run(payload: z.output<Payload>, ctx: JobContext): Promise<Summary>;
}

/** Declares a job; the identity function keeps the payload type tied to `run`. */
export function defineJob<Payload extends z.ZodType, Summary>(
  definition: JobDefinition<Payload, Summary>,
): JobDefinition<Payload, Summary> {
  return definition;
}

/**
 * Any job definition, for the catalog that holds jobs of different payloads. `never`
 * parameters accept every job's own payload type; the worker only ever calls `run`
 * with the output of that job's own `payload.parse`.
 */
export interface AnyJobDefinition {
  name: string;
  queue: QueueName;
  payload: z.ZodType;
  resource?: string;
  summary?: z.ZodType;
  schedule?: JobSchedule;
  exclusive?: (payload: never) => string;
  attempts?: number;
  enqueuedByName?: boolean;
  run(payload: never, ctx: JobContext): Promise<unknown>;
}

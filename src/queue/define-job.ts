import type { z } from 'zod';
import type { JobContext } from '../runtime/context.ts';
import type { JobName, QueueName } from './names.ts';

export interface JobDefinition<Payload extends z.ZodType = z.ZodType, Summary = unknown> {
  name: JobName;
  queue: QueueName;
  payload: Payload;
  /**
   * Jobs with the same exclusive key never run at once, across every worker process
   * (a Postgres advisory lock); a second one is put back and tried again later.
   */
  exclusive?: (payload: z.output<Payload>) => string;
  /** Attempts for transient failures (default 5), with exponential backoff. */
  attempts?: number;
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
  name: JobName;
  queue: QueueName;
  payload: z.ZodType;
  exclusive?: (payload: never) => string;
  attempts?: number;
  run(payload: never, ctx: JobContext): Promise<unknown>;
}

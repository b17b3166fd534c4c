import type { z } from 'zod';
import type { JobContext } from '../context.ts';
import type { QueueName } from './names.ts';

/** What a running job knows about itself (from BullMQ), without exposing BullMQ types. */
export interface JobInfo {
  id: string;
  name: string;
  attemptsMade: number;
}

export interface JobDefinition<Payload extends z.ZodType = z.ZodType, Summary = unknown> {
  name: string;
  queue: QueueName;
  payload: Payload;
  /**
   * Jobs with the same exclusive key never run at once, across every worker process
   * (a Postgres advisory lock); a second one is put back and tried again later.
   */
  exclusive?: (payload: z.output<Payload>) => string;
  /** Attempts for transient failures (default 5), with exponential backoff. */
  attempts?: number;
  run(payload: z.output<Payload>, ctx: JobContext & { job: JobInfo }): Promise<Summary>;
}

/** Declares a job; the identity function keeps the payload type tied to `run`. */
export function defineJob<Payload extends z.ZodType, Summary>(
  definition: JobDefinition<Payload, Summary>,
): JobDefinition<Payload, Summary> {
  return definition;
}

/**
 * Any job definition, for registries that hold jobs of different payloads. `never`
 * parameters accept every job's own payload type; the worker only ever calls `run`
 * with the output of that job's own `payload.parse`.
 */
export interface AnyJobDefinition {
  name: string;
  queue: QueueName;
  payload: z.ZodType;
  exclusive?: (payload: never) => string;
  attempts?: number;
  run(payload: never, ctx: JobContext & { job: JobInfo }): Promise<unknown>;
}

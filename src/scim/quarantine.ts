import { HttpError } from '../http/http-error.ts';
import { TrainsyncError } from '../lib/errors.ts';

/**
 * Which failures of a User's plan set it aside (store.ts quarantineUsers) rather than leave it
 * pending for the sweep. Only a failure of the User alone (its batch split down to it,
 * batcher.ts) is judged here. An outage of Postgres or Redis, a lock or serialisation
 * conflict, a platform 5xx: pending, tried again. A refusal of this User's own data (a 4xx, a
 * value Postgres will not take, a bug the mapping hits on it): trying again repeats it.
 */
export function quarantinable(error: unknown, outage: (error: unknown) => boolean): boolean {
  if (outage(error)) return false;
  if (error instanceof HttpError) return error.status < 500;
  if (error instanceof TrainsyncError) return !error.retryable;
  if (typeof error === 'object' && error !== null && 'retryable' in error && typeof error.retryable === 'boolean') return !error.retryable;
  const code = typeof error === 'object' && error !== null && 'code' in error && typeof error.code === 'string' ? error.code : '';
  // SQLSTATE: data exception, integrity, program limit (an index entry too long), syntax or access.
  if (/^[0-9A-Z]{5}$/.test(code)) return /^(22|23|54|42)/.test(code);
  return error instanceof TypeError || error instanceof RangeError;
}

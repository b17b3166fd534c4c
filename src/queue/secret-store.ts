import type { Cluster, Redis } from 'ioredis';
import type { OrgRef } from '../warehouse/scope.ts';
import { jobSecretKey } from './keys.ts';

/**
 * Secrets a queued job needs, kept out of the job's data (bull-board shows job data to
 * every console viewer, and BullMQ keeps it after the job ends). The value is stored as
 * given — the caller encrypts it first — under a key of its own with a time to live.
 */
export interface SecretStore {
  /** Keeps `value` for `ttlSeconds` under (the organisation of `scope`, id), replacing any earlier one. */
  put(scope: OrgRef, id: string, value: string, ttlSeconds: number): Promise<void>;
  /** The value, or undefined once dropped or expired. */
  get(scope: OrgRef, id: string): Promise<string | undefined>;
  /** Forgets it (used, or failed for good). */
  drop(scope: OrgRef, id: string): Promise<void>;
  /** Seconds left (-2 when there is none), for `status` and tests. */
  ttl(scope: OrgRef, id: string): Promise<number>;
}

export function redisSecretStore(connection: Redis | Cluster, prefix: string): SecretStore {
  const key = (scope: OrgRef, id: string): string => jobSecretKey(prefix, scope, id);
  return {
    async put(scope, id, value, ttlSeconds) {
      await connection.set(key(scope, id), value, 'EX', Math.max(1, Math.ceil(ttlSeconds)));
    },
    async get(scope, id) {
      return (await connection.get(key(scope, id))) ?? undefined;
    },
    async drop(scope, id) {
      await connection.del(key(scope, id));
    },
    ttl: (scope, id) => connection.ttl(key(scope, id)),
  };
}

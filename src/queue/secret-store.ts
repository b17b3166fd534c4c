import type { Cluster, Redis } from 'ioredis';
import { jobSecretKey } from './keys.ts';

/**
 * Secrets a queued job needs, kept out of the job's data (bull-board shows job data to
 * every console viewer, and BullMQ keeps it after the job ends). The value is stored as
 * given — the caller encrypts it first — under a key of its own with a time to live.
 */
export interface SecretStore {
  /** Keeps `value` for `ttlSeconds` under (org, id), replacing any earlier one. */
  put(org: string, id: string, value: string, ttlSeconds: number): Promise<void>;
  /** The value, or undefined once dropped or expired. */
  get(org: string, id: string): Promise<string | undefined>;
  /** Forgets it (used, or failed for good). */
  drop(org: string, id: string): Promise<void>;
  /** Seconds left (-2 when there is none), for `status` and tests. */
  ttl(org: string, id: string): Promise<number>;
}

export function redisSecretStore(connection: Redis | Cluster, prefix: string): SecretStore {
  const key = (org: string, id: string): string => jobSecretKey(prefix, org, id);
  return {
    async put(org, id, value, ttlSeconds) {
      await connection.set(key(org, id), value, 'EX', Math.max(1, Math.ceil(ttlSeconds)));
    },
    async get(org, id) {
      return (await connection.get(key(org, id))) ?? undefined;
    },
    async drop(org, id) {
      await connection.del(key(org, id));
    },
    ttl: (org, id) => connection.ttl(key(org, id)),
  };
}

import type { Cluster, Redis } from 'ioredis';
import type { OrgRef } from '../warehouse/scope.ts';
import { lockNoteKey } from './keys.ts';

/**
 * Who holds a lock, in words, beside the queue: an advisory lock says only that it is
 * taken, so its holder writes a note (the command or job, its host:pid, when it started)
 * for whoever finds the lock taken to quote. The lock decides; the note only explains,
 * and expires on its own if its holder died without removing it.
 */
export interface LockNotes {
  /** Writes the note of (the organisation of `scope`, name), replacing any earlier one. */
  put(scope: OrgRef, name: string, note: string, ttlSeconds: number): Promise<void>;
  get(scope: OrgRef, name: string): Promise<string | undefined>;
  /** Removes it, only if it is still `note` (a later holder's note is left alone). */
  drop(scope: OrgRef, name: string, note: string): Promise<void>;
}

export function redisLockNotes(connection: Redis | Cluster, prefix: string): LockNotes {
  const key = (scope: OrgRef, name: string): string => lockNoteKey(prefix, scope, name);
  return {
    async put(scope, name, note, ttlSeconds) {
      await connection.set(key(scope, name), note, 'EX', Math.max(1, Math.ceil(ttlSeconds)));
    },
    async get(scope, name) {
      return (await connection.get(key(scope, name))) ?? undefined;
    },
    async drop(scope, name, note) {
      // Compare and delete in one step.
      await connection.eval("if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0", 1, key(scope, name), note);
    },
  };
}

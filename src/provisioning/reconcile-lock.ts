import os from 'node:os';
import { orgScoped } from '../queue/org-scope.ts';
import { tryAdvisoryLock } from '../warehouse/advisory-lock.ts';
import type { ProvisionDeps } from './pipeline/types.ts';

/**
 * One `reconcile --fix` of an organisation at a time, whoever starts it: the CLI, the
 * worker's schedule (the `reconcile-fix` job) or the console's Drift repair. The
 * provisioning lock already makes their plans take turns; this lock makes the second one
 * yield instead of planning a moment after the first, from a platform the first one's
 * actions are still changing. The one that finds it taken changes nothing and says who
 * holds it (the holder's note: what started it, where, when).
 */
export const RECONCILE_LOCK = 'reconcile-fix';

/** A note outlives a holder that died without removing it by at most this long (the lock itself goes with its session). */
const NOTE_TTL_SECONDS = 6 * 3600;

/** Who started a reconcile: what the one that yields quotes. */
export interface ReconcileStarter {
  by: 'cli' | 'schedule' | 'console';
  /** The worker's job id (the schedule), or the person (the console). */
  jobId?: string | undefined;
  who?: string | undefined;
}

/** A reconcile that found another one of its organisation running: nothing was planned or changed. */
export interface ReconcileBusy {
  /** The holder's note, when it wrote one (it may have only just taken the lock). */
  holder: string | undefined;
  message: string;
}

/** The key of the organisation's reconcile lock (`default` keeps the bare name). */
export function reconcileLockKey(org: string): string {
  return orgScoped(org, RECONCILE_LOCK);
}

/** The note a holder writes: `the scheduled job 42 on host:1234, started 2026-12-07 13:05:09 UTC`. */
export function starterNote(starter: ReconcileStarter, now: Date = new Date()): string {
  const what =
    starter.by === 'schedule'
      ? `the scheduled reconcile-fix job${starter.jobId ? ` ${starter.jobId}` : ''}`
      : starter.by === 'console'
        ? `a Drift repair from the console${starter.who ? ` by ${starter.who}` : ''}`
        : '`trainsync reconcile --fix`';
  return `${what} on ${os.hostname()}:${process.pid}, started ${now.toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

/** The sentence the one that yields says. */
export function busyMessage(org: string, holder: string | undefined): string {
  return `another reconcile --fix of organisation ${org} is running (${holder ?? 'it has only just started and not yet said who it is'}); this one skipped: nothing was planned, enqueued or changed. Run it again once that one has finished (\`trainsync status\` lists the provisioning actions still queued)`;
}

/**
 * Runs `fn` holding the organisation's reconcile lock, with the holder's note written for
 * the others; or, when another reconcile of the organisation holds it, returns at once
 * what to say (nobody waits: the one running repairs what there is to repair).
 */
export async function underReconcileLock<T>(deps: Pick<ProvisionDeps, 'locks' | 'scope' | 'queue'>, starter: ReconcileStarter, fn: () => Promise<T>): Promise<{ ran: true; value: T } | { ran: false; busy: ReconcileBusy }> {
  const { org } = deps.scope;
  const notes = deps.queue.lockNotes;
  const got = await tryAdvisoryLock(deps.locks, reconcileLockKey(org), async () => {
    const note = starterNote(starter);
    await notes.put(deps.scope, RECONCILE_LOCK, note, NOTE_TTL_SECONDS);
    try {
      return await fn();
    } finally {
      await notes.drop(deps.scope, RECONCILE_LOCK, note).catch(() => undefined);
    }
  });
  if (got.acquired) return { ran: true, value: got.value };
  const holder = await holderNote(() => notes.get(deps.scope, RECONCILE_LOCK).catch(() => undefined));
  return { ran: false, busy: { holder, message: busyMessage(org, holder) } };
}

/** How long the one that yields waits for the holder's note: the lock (Postgres) and the note (Redis) cannot be taken in one step. */
const NOTE_WAIT_MS = 2_000;
const NOTE_POLL_MS = 100;

/**
 * The holder's note, asked again for a moment while it is missing: a holder that has
 * only just taken the lock writes it a round trip later, and saying who holds the lock is
 * worth a second's wait to the one that changes nothing. Undefined once the wait is over
 * (a holder that is slow to write it, or one whose note expired).
 */
async function holderNote(read: () => Promise<string | undefined>): Promise<string | undefined> {
  const until = performance.now() + NOTE_WAIT_MS;
  for (;;) {
    const note = await read();
    if (note !== undefined || performance.now() >= until) return note;
    await new Promise((resolve) => setTimeout(resolve, NOTE_POLL_MS));
  }
}

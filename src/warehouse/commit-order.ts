import { randomInt } from 'node:crypto';
import type { OrgScope, OrgTx } from './scope.ts';

/** Thrown inside a transaction whose predecessor has not committed (yet): it rolls back and waits. */
class PredecessorPending extends Error {}

interface Slot {
  seq: number;
  /** Resolves once the transaction holds its order lock (or gave up trying). */
  locked: Promise<void>;
  /** Settles when the transaction committed for good, or failed for good. */
  committed: Promise<unknown>;
  /** The server's id of its latest attempt, as text (bigint). */
  txid?: string;
}

export interface CommitOrderOptions {
  /**
   * `synchronous_commit = off` for these transactions: a commit lost to a server crash
   * is one whose rows and checkpoint are both lost, and the walk re-reads from the
   * checkpoint that survived. Never for anything that is not re-read.
   */
  synchronousCommit?: boolean;
}

/**
 * Transactions that run concurrently, each on a connection of its own, but commit in
 * the order they were started, so a checkpoint written by one never gets ahead of rows
 * still uncommitted in an earlier one. Each transaction takes an advisory lock of its
 * own (two int keys: never the one-key locks of `advisory-lock.ts`); the next one, its
 * work done, waits for that lock in Postgres (so a row-lock cycle between the two is a
 * deadlock Postgres sees, and breaks) and then asks Postgres whether its predecessor's
 * transaction committed. If not (it rolled back, or is being retried), it rolls back
 * itself, holding nothing, waits for the predecessor to commit, and runs again.
 */
export class CommitOrder {
  private readonly key = randomInt(-2_147_483_648, 2_147_483_647);
  private next = 0;
  private last: Slot | undefined;
  /** Set by the run declared last: a later one could commit before it unseen. */
  private closed = false;

  constructor(
    /** The organisation whose transactions these are: each runs as `scope.retriedTransaction`. */
    private readonly scope: Pick<OrgScope, 'retriedTransaction'>,
    private readonly options: CommitOrderOptions = {},
  ) {}

  /**
   * Runs `work` in a transaction of its own (concurrently with earlier ones), then,
   * once every earlier transaction has committed, `tail` in the same transaction
   * (checkpoints go there), and commits. Rejects when the transaction, or an earlier
   * one, failed for good. `last`: no transaction will be run after this one, so none will
   * wait for it: it takes no order lock of its own and reads no id for a successor (one
   * round trip fewer; a walk's closing batch, often empty), and commits synchronously.
   */
  run<W, T>(work: (tx: OrgTx) => Promise<W>, tail: (tx: OrgTx, worked: W) => Promise<T>, options: { last?: boolean } = {}): Promise<T> {
    if (this.closed) throw new Error('CommitOrder: a transaction was run after the last one');
    if (options.last === true) this.closed = true;
    const predecessor = this.last;
    let markLocked: () => void = () => undefined;
    const slot: Slot = { seq: this.next++, locked: new Promise<void>((resolve) => (markLocked = resolve)), committed: Promise.resolve() };
    const setup = this.options.synchronousCommit === false ? "set_config('synchronous_commit', 'off', true), " : '';
    const committed = (async (): Promise<T> => {
      try {
        // Not before the predecessor holds its lock, or we could find it free and not wait.
        if (predecessor) await predecessor.locked;
        for (;;) {
          try {
            return await this.scope.retriedTransaction(async (tx) => {
              if (options.last !== true) {
                const { rows } = await tx.client.query<{ txid: string }>(`select ${setup}pg_advisory_xact_lock($1, $2), txid_current()::text as txid`, [this.key, slot.seq]);
                slot.txid = rows[0]!.txid;
              }
              markLocked();
              const worked = await work(tx);
              if (predecessor) {
                await tx.client.query('select pg_advisory_xact_lock_shared($1, $2)', [this.key, predecessor.seq]);
                const status = await tx.client.query<{ status: string | null }>('select txid_status($1::bigint) as status', [predecessor.txid ?? null]);
                if (status.rows[0]?.status !== 'committed') throw new PredecessorPending();
              }
              return tail(tx, worked);
            });
          } catch (error) {
            if (!(error instanceof PredecessorPending) || !predecessor) throw error;
            // Rolled back: we hold nothing while the predecessor is retried.
            await predecessor.committed;
          }
        }
      } finally {
        markLocked();
      }
    })();
    slot.committed = committed;
    // A failure is the caller's to handle; a successor sees it through `committed` too.
    committed.catch(() => undefined);
    this.last = slot;
    return committed;
  }
}

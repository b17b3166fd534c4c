import { errorMessage } from '../../../lib/errors.ts';
import { snapshotEmployees, type EmployeeSnapshotCounts } from '../../employees-store.ts';
import { recordFeed } from '../../apply/feeds-store.ts';
import type { FeedFormat, FeedRow } from '../../feed/types.ts';
import type { HeldSource } from '../../held-sources.ts';
import type { MaxDisable, PlanMode } from '../../plan/types.ts';
import { runPipeline } from '../run-pipeline.ts';
import { pipelineDeps, type PipelineDeps, type Source } from '../types.ts';

/**
 * An HR feed as a source: its valid rows are the desired state (full: everyone not listed
 * is a leaver), its rejected rows' keys are never leavers, a file that could not be read
 * plans nothing. Once applied, the feed is snapshotted into training.employees (a failure
 * there does not abandon the actions just enqueued). A full feed is a whole statement: its
 * data rows meet the feed-shrink guard (pipeline/shrink.ts) before anything is planned. Past
 * the disable limit the whole plan is held: a feed cut short looks like a mass leave.
 */

export interface FeedInput {
  /** sha256 of the file: the audit rows' mark. */
  hash: string;
  /** The file's name, as plans and holds show it. */
  file: string;
  mode: PlanMode;
  rows: readonly FeedRow[];
  invalidEmployeeIds: ReadonlySet<string>;
  invalidEmails: ReadonlySet<string>;
  fileErrors: readonly string[];
  maxDisable: MaxDisable | undefined;
  /** Data rows of the file, valid or rejected (feed/shrink-guard.ts feedDataRows): the feed-shrink guard's count; default the valid rows. */
  dataRows?: number | undefined;
  /** A feed read from a file records the read (trainsync.feeds), dry runs and refusals too; a held feed being approved was recorded when read. */
  record?: { path: string; format: FeedFormat; rowErrors: number } | undefined;
}

export interface FeedAfter {
  /** The feed's snapshot into training.employees. */
  employees?: EmployeeSnapshotCounts;
  /** Why that snapshot failed (the actions were enqueued all the same). */
  employeesError?: string;
}

export function feedSource(deps: Pick<PipelineDeps, 'scope' | 'log'>, input: FeedInput): Source<FeedAfter> {
  const record = input.record;
  return {
    kind: 'feed',
    label: input.file,
    auditMark: input.hash,
    desired: async () => ({
      rows: input.rows,
      mode: input.mode,
      invalidEmployeeIds: input.invalidEmployeeIds,
      invalidEmails: input.invalidEmails,
      fileErrors: input.fileErrors,
      appliedScope: 'all',
      ...(input.mode === 'full' ? { listed: input.dataRows ?? input.rows.length } : {}),
    }),
    guard: { maxDisable: input.maxDisable, setting: '--max-disable', holds: 'plan' },
    checkSeats: true,
    adopt: true,
    createLookUp: 'now',
    ...(record
      ? {
          planned: async (plan, dryRun) => {
            await recordFeed(deps.scope, {
              hash: input.hash,
              path: record.path,
              format: record.format,
              mode: input.mode,
              dryRun,
              rows: input.rows.length,
              errors: record.rowErrors + plan.errors.length,
              actions: plan.actions.length,
              // An unreadable feed keeps why (its file errors), for the console to say.
              refused: plan.refused?.reason === 'feed-errors' && input.fileErrors.length > 0 ? `feed-errors: ${input.fileErrors.join('; ')}`.slice(0, 1000) : (plan.refused?.reason ?? null),
            });
          },
        }
      : {}),
    afterEnqueue: async () =>
      snapshotEmployees(deps.scope, {
        rows: input.rows,
        mode: input.mode,
        keepEmployeeIds: input.invalidEmployeeIds,
        keepEmails: input.invalidEmails,
      }).then(
        (employees): FeedAfter => ({ employees }),
        (error: unknown): FeedAfter => {
          deps.log.warn({ err: error }, 'employee snapshot failed');
          return { employeesError: errorMessage(error) };
        },
      ),
  };
}

/**
 * A held feed decided: approving plans the reviewed rows again (the feed as it was read,
 * recorded then) and snapshots them into training.employees, as `provision --force` would;
 * rejecting takes nothing back.
 */
export const heldFeed: HeldSource = {
  approve: async (deps, plan, approving) => {
    const source = feedSource(deps, {
      hash: plan.feedHash ?? '',
      file: plan.file,
      mode: plan.mode,
      rows: plan.feed.rows,
      invalidEmployeeIds: new Set(plan.feed.keepEmployeeIds),
      invalidEmails: new Set(plan.feed.keepEmails),
      fileErrors: [],
      maxDisable: undefined,
    });
    const run = await runPipeline(pipelineDeps(deps), source, { dryRun: false, force: false, locked: true, approving });
    if (run.plan.refused || !run.enqueued) return { applied: false, refused: run.plan.refused };
    return { applied: true, enqueued: run.enqueued.enqueued, waitingOn: run.enqueued.waitingOn, pending: run.enqueued.skippedEmployees, snapshotError: run.after?.employeesError };
  },
  reject: async () => ({ pending: [] }),
};

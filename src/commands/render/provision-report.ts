import Table from 'cli-table3';
import { jsonChunks } from '../../lib/json-stream.ts';
import type { AuditRow } from '../../provisioning/apply/actions-store.ts';
import type { FeedReadResult } from '../../provisioning/feed/types.ts';
import { formatPlanTable, type PlanTableOptions } from './plan-format.ts';
import type { ShrinkCheck } from '../../provisioning/pipeline/shrink.ts';
import type { ProvisionResult } from '../../provisioning/provision-feed.ts';

/** Exit statuses of `trainsync provision`. */
export const PROVISION_EXIT = {
  ok: 0,
  /** Applied, but something needs a person: rows left out, actions failed or waiting for an identity. */
  attention: 1,
  /** Refused: nothing was enqueued (limit exceeded, seats, unreadable feed). */
  refused: 2,
} as const;

const SHOWN_ERRORS = 50;

/** The feed's row errors, one sentence each (file, line, field, the fix). */
export function formatFeedErrors(feed: FeedReadResult): string[] {
  const lines = [...feed.fileErrors.map((e) => `feed error: ${e}`)];
  for (const error of feed.errors.slice(0, SHOWN_ERRORS)) lines.push(`row error: ${error.message}`);
  if (feed.errors.length > SHOWN_ERRORS) lines.push(`row error: … and ${feed.errors.length - SHOWN_ERRORS} more (use --json for all)`);
  return lines;
}

/** Counts of the actions by kind and how they ended, then the ones that need a person. */
export function formatOutcome(audit: readonly AuditRow[]): string {
  const statuses = ['succeeded', 'failed', 'needs-identity', 'queued', 'skipped'] as const;
  const table = new Table({ head: ['action', ...statuses], style: { head: [], border: [], compact: true } });
  const kinds = [...new Set(audit.map((r) => r.kind))];
  for (const kind of kinds) {
    const rows = audit.filter((r) => r.kind === kind);
    table.push([kind, ...statuses.map((s) => rows.filter((r) => r.status === s).length)]);
  }
  const lines = [`Applied (${audit.length} actions)`, table.toString()];
  const attention = audit.filter((r) => r.status === 'failed' || r.status === 'needs-identity');
  for (const r of attention.slice(0, 20)) lines.push(`${r.status}: ${r.actionId} (${r.email}) ${r.errorCode ?? ''}: ${r.errorMessage ?? ''}`);
  if (attention.length > 20) lines.push(`… and ${attention.length - 20} more: see \`trainsync status\` or trainsync.provisioning_audit`);
  return lines.join('\n');
}

/** The exit status a provisioning result deserves; see PROVISION_EXIT. */
export function provisionExitCode(result: ProvisionResult): number {
  if (result.plan.refused !== undefined) return PROVISION_EXIT.refused;
  const rowProblems = result.feed.errors.length + result.plan.errors.length;
  const actionProblems = result.applied?.audit.filter((r) => r.status === 'failed' || r.status === 'needs-identity').length ?? 0;
  return rowProblems + actionProblems > 0 ? PROVISION_EXIT.attention : PROVISION_EXIT.ok;
}

/**
 * Said first when the plan needs more seats than are free: above the counts and the
 * examples, where a person reading a dry run of 300,000 rows sees it before anything else.
 */
export function seatsShortLine(plan: ProvisionResult['plan'], seats: ProvisionResult['seats']): string | undefined {
  const free = seats.free;
  const needed = plan.counts['create-user'] + plan.counts.enable;
  if (free === undefined || needed <= free) return undefined;
  const what = `NOT ENOUGH SEATS: the plan needs ${needed} seats (${plan.counts['create-user']} new accounts, ${plan.counts.enable} re-enabled) but only ${free} are free`;
  return plan.refused !== undefined
    ? `${what}; refused, nothing is enqueued: free seats or buy more on the platform, then rerun (or --force)`
    : `${what}; enqueued anyway (--force): creates beyond the free seats fail with USER_LIMIT_REACHED`;
}

/** The plan part of the report (before anything is applied). */
export function formatPlanReport(result: Pick<ProvisionResult, 'feed' | 'plan' | 'seats' | 'adoptionNote'>, file: string, options: PlanTableOptions = {}): string {
  const { feed, plan } = result;
  // A feed that cannot be read: nothing was planned, so there is no plan (nor seats) to show;
  // the feed error says why, once, and the exit reason says what happened (refusal-line.ts).
  if (plan.refused?.reason === 'feed-errors') return formatFeedErrors(feed).join('\n');
  const short = seatsShortLine(plan, result.seats);
  const lines = [
    ...(short === undefined ? [] : [short]),
    `${file}: ${feed.rows.length} rows read, ${feed.errors.length} rejected (sha256 ${feed.hash.slice(0, 12)}…)`,
    ...formatFeedErrors(feed),
  ];
  if (result.adoptionNote) lines.push(result.adoptionNote);
  lines.push(result.seats.note, formatPlanTable(plan, options));
  return lines.join('\n');
}

/** What --json prints: the whole result as plain JSON. */
function resultDocument(result: ProvisionResult): Record<string, unknown> {
  const { feed } = result;
  return {
    feed: { hash: feed.hash, rows: feed.rows.length, errors: feed.errors, fileErrors: feed.fileErrors, lineCount: feed.lineCount },
    adopted: result.adopted,
    seats: result.seats,
    platformRequests: result.platformRequests,
    plan: result.plan,
    applied: result.applied ?? null,
    exitCode: provisionExitCode(result),
  };
}

/** The whole result as plain JSON (sets become arrays). */
export function provisionResultJson(result: ProvisionResult): string {
  return JSON.stringify(resultDocument(result), null, 2);
}

/** The same text in pieces, one action at a time (lib/json-stream.ts): a plan of 875,000 actions is past what one string holds. */
export function* provisionResultJsonChunks(result: ProvisionResult, end = ''): Generator<string> {
  yield* jsonChunks(resultDocument(result), 2);
  yield end;
}

/** A feed the shrink guard refused, as --json prints it: nothing was planned, so there is no plan. */
export function shrinkRefusalJson(feed: FeedReadResult, check: ShrinkCheck): string {
  const refused = check.decision.refused ? { reason: check.decision.reason, message: check.decision.message, needed: check.decision.needed } : null;
  return JSON.stringify(
    {
      feed: { hash: feed.hash, rows: feed.rows.length, dataRows: check.dataRows, errors: feed.errors, fileErrors: feed.fileErrors, lineCount: feed.lineCount },
      activeEmployees: check.activeEmployees,
      minSharePercent: check.minSharePercent,
      refused,
      plan: null,
      applied: null,
      exitCode: PROVISION_EXIT.refused,
    },
    null,
    2,
  );
}

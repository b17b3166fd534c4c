import { utcMinute } from '../lib/utc-minute.ts';
import { userInfo } from 'node:os';
import { InvalidArgumentError, type Command } from 'commander';
import { createApp, type App } from '../runtime/app.ts';
import { approveHeldPlan, rejectHeldPlan } from '../provisioning/approve-held-plan.ts';
import { waitForActions } from '../provisioning/apply/enqueue.ts';
import { getHeldPlan, heldPlansOf, listHeldPlans, type HeldPlanLine, type HeldPlanSummary } from '../provisioning/held-plans.ts';
import type { CommandDeps } from './options/deps.ts';
import { EXIT, RefusedError, UsageError } from './options/exit-codes.ts';
import { fitTable } from './render/fit-table.ts';
import { fitText, stderrLine } from './render/terminal.ts';
import { requestedOrgs, selectOrgs } from './options/org-option.ts';
import { confirmCountOption } from './options/confirm-option.ts';
import { provisionDeps } from './options/provision-deps.ts';
import { formatOutcome } from './render/provision-report.ts';
import { sectionOfOne, type StatusSection } from './status/status-report.ts';

/**
 * `trainsync held`: every change a guard held (an HR feed's plan, a SCIM burst, a drift
 * repair) is a held plan, listed here per organisation and decided here or in the console:
 * `--approve ID --confirm N` (N: the number of people who will lose access) or
 * `--reject ID [--reason TEXT]`.
 */

export interface HeldCliOptions {
  approve?: number;
  confirm?: number;
  reject?: number;
  reason?: string;
  json?: boolean;
}

/** Commander's parser of a held plan's id (also the `scim held` alias's). */
export function heldPlanIdOption(value: string): number {
  if (!/^\d+$/.test(value.trim())) throw new InvalidArgumentError('expected the id of a held plan, e.g. 12 (see `trainsync held`)');
  return Number(value);
}

/** Commander's parser of --confirm N (also the `scim held` alias's): a whole number of people, nothing else (options/confirm-option.ts). */
export const loseAccessCountOption = confirmCountOption;

/** Who decided, for the plan's record: the operating-system user running the command. */
function cliUser(): string {
  // userInfo() throws when the uid has no passwd entry (a container's arbitrary uid).
  try {
    return userInfo().username;
  } catch {
    return 'unknown';
  }
}

/** The listing: one line per plan, the why in numbers; the organisation column when several are shown. */
export function renderHeldPlans(plans: readonly HeldPlanSummary[], orgs: readonly string[]): string {
  if (plans.length === 0) return `no held plans (${orgs.join(', ')})\n`;
  const multi = orgs.length > 1;
  const head = ['plan', ...(multi ? ['org'] : []), 'source', 'from', 'lose access', 'actions', 'rows read', 'active', 'held (UTC)'];
  const rows = plans.map((p) => [`#${p.id}`, ...(multi ? [p.org] : []), p.source, p.file, p.disables, p.actionCount, p.rowsRead ?? '', p.activeEmployees ?? '', utcMinute(p.createdAt)]);
  const why = plans.map((p) => `#${p.id}: ${p.message}`);
  // Sentences wrap at the terminal's width (fitText), the table is drawn to fit already.
  return fitText(
    `${fitTable(head, rows)}\n${why.join('\n')}\napprove: trainsync held --approve ID --confirm N (N: how many lose access)\nreject:  trainsync held --reject ID [--reason TEXT]`,
  );
}

/** Held plans listed per organisation in `status` (the title counts them all). */
const SHOWN = 50;

/** `status` section: each organisation's held plans (one statement for all); the title counts them. */
export const heldPlansAcross: StatusSection = async (db, orgs) => {
  const rows = await heldPlansOf(db, orgs, SHOWN);
  const plans = new Map<string, HeldPlanLine[]>(orgs.map((org) => [org, []]));
  for (const row of rows) plans.get(row.org)?.push(row);
  return new Map(
    [...plans].map(([org, list]) => [
      org,
      {
        title: `Held plans: ${list[0]?.total ?? 0} (review, approve or reject: trainsync held)`,
        rows: list.map((p) => ({ plan: p.id, source: p.source, from: p.file, 'lose access': p.disables, actions: p.actions, held: p.created_at })),
      },
    ]),
  );
};

/** The section of one organisation. */
export const heldPlansSection = sectionOfOne(heldPlansAcross);

async function decide(app: App, orgs: readonly string[], options: HeldCliOptions, write: (text: string) => void): Promise<number> {
  const id = (options.approve ?? options.reject)!;
  const found = await getHeldPlan(app.scopes.scope(orgs).db, id);
  if (!found) {
    // The CLI's operator runs every organisation: a plan outside --org is named, so the fix is one flag away.
    const elsewhere = await app.scopes.acrossOrganisations('held: the organisation of a plan outside --org, for the refusal line', ({ db }) => getHeldPlan(db, id));
    if (elsewhere) throw new RefusedError(`plan #${id} is organisation ${elsewhere.org}'s: add --org ${elsewhere.org}`);
    throw new RefusedError(`no held plan #${id}; \`trainsync held\` lists the ones still held`);
  }
  const deps = provisionDeps(app, found.org);
  const by = cliUser();
  if (options.reject !== undefined) {
    const result = await rejectHeldPlan(deps, id, { by, role: 'cli', note: options.reason });
    if (!result.ok) throw new RefusedError(result.reason);
    write(`rejected plan #${id}: nothing was enqueued${found.source === 'scim' ? '; its people stay active in trainsync (the identity provider still shows them inactive)' : ''}\n`);
    return EXIT.ok;
  }
  const result = await approveHeldPlan(deps, id, { by, role: 'cli' }, { typed: options.confirm, ask: { give: '--confirm N', shownBy: '`trainsync held`' } });
  if (!result.ok) throw new RefusedError(result.reason);
  const pending = result.pending.length > 0 ? `; ${result.pending.length} employees still have earlier actions queued and are planned once those finish` : '';
  write(`approved plan #${id}: ${result.enqueued.length} actions enqueued${pending}\n`);
  if (result.snapshotError) stderrLine(`the employee snapshot failed (the actions were enqueued): ${result.snapshotError}`);
  const audit = await waitForActions(deps, [...result.enqueued, ...result.waitingOn]);
  if (audit.length > 0) write(`${formatOutcome(audit)}\n`);
  return audit.some((r) => r.status === 'failed' || r.status === 'needs-identity') ? EXIT.failed : EXIT.ok;
}

/** Lists, approves or rejects held plans; returns the exit status. */
export async function runHeld(deps: Pick<CommandDeps, 'loadConfig' | 'createLogger' | 'jobs'>, options: HeldCliOptions, requested: readonly string[], write: (text: string) => void): Promise<number> {
  if (options.approve !== undefined && options.reject !== undefined) throw new UsageError('give --approve or --reject, not both');
  if (options.confirm !== undefined && options.approve === undefined) throw new UsageError('--confirm goes with --approve ID');
  if (options.reason !== undefined && options.reject === undefined) throw new UsageError('--reason goes with --reject ID');
  const config = deps.loadConfig();
  // A listing reads every organisation unless --org names some; a decision acts in its plan's own.
  const orgs = (requested.length === 0 ? config.orgs : selectOrgs(config, requested)).map((o) => o.slug);
  const app = await createApp(config, deps.createLogger(config), { jobs: deps.jobs, migrate: true });
  try {
    if (options.approve !== undefined || options.reject !== undefined) return await decide(app, orgs, options, write);
    const plans = (await Promise.all(orgs.map((org) => listHeldPlans(app.scopes.scope(org), { onlyHeld: true })))).flat().sort((a, b) => b.id - a.id);
    write(options.json ? `${JSON.stringify(plans, null, 2)}\n` : renderHeldPlans(plans, orgs));
    return EXIT.ok;
  } finally {
    await app.close();
  }
}

export const HELD_HELP = `
A guard holds a change instead of applying it: a feed's or a repair's plan that would
disable more than --max-disable (the larger of 5 and 10% of the active employees by
default), or SCIM deactivations past TRAINSYNC_SCIM_MAX_DISABLE within a sliding hour.
Each is a held plan: which source held it and why (rows read, active employees, how many
would lose access). Approving runs it through the same pipeline with those people let
through once, and needs --confirm N, N the number of people who will lose access; a newer
feed, or (for SCIM) the identity provider stating someone active again, supersedes it.
Rejecting enqueues nothing (a SCIM burst's people stay active in trainsync's record).

Every organisation's plans are listed unless --org names some. Exit status 0; 1 approved
but actions failed; 2 refused (no such held plan, another organisation's, a missing or
wrong --confirm, or the plan now refused by a guard): nothing was changed.

N is checked against the people the plan takes access from now (the platform and
trainsync's record read again): a different number is refused and nothing changes.

Examples:
  trainsync held
  trainsync held --approve 12 --confirm N      (N: the "lose access" count of plan 12)
  trainsync held --reject 12 --reason "feed cut short"`;

export function registerHeldCommand(program: Command, deps: CommandDeps): void {
  program
    .command('held')
    .description('List the changes a guard held (feeds, SCIM bursts, repairs); --approve or --reject one.')
    .option('--approve <id>', 'apply the held plan now (through the pipeline, once)', heldPlanIdOption)
    .option('--confirm <n>', 'with --approve: the number of people who will lose access', loseAccessCountOption)
    .option('--reject <id>', 'do not apply it', heldPlanIdOption)
    .option('--reason <text>', 'with --reject: why (kept with the decision)')
    .option('--json', 'print the held plans as JSON')
    .addHelpText('after', HELD_HELP)
    .action(async (options: HeldCliOptions, command: Command) => {
      process.exitCode = await runHeld(deps, options, requestedOrgs(command), (text) => void process.stdout.write(text));
    });
}

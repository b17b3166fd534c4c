import Table from 'cli-table3';
import { InvalidArgumentError, type Command } from 'commander';
import { createApp } from '../runtime/app.ts';
import { dropHeld, heldActions, HeldActionNotFound, releaseHeld, type HeldAction } from '../scim/held.ts';
import type { CommandDeps } from './deps.ts';
import { requestedOrgs, selectOneOrg } from './org-option.ts';
import type { StatusSection } from './status.ts';

function idOption(value: string): number {
  if (!/^\d+$/.test(value.trim())) throw new InvalidArgumentError('expected the id of a held action, e.g. 12 (see `trainsync scim held`)');
  return Number(value);
}

function renderHeld(rows: readonly HeldAction[], org: string): string {
  if (rows.length === 0) return `no SCIM deactivations held (${org})\n`;
  const table = new Table({ head: ['id', 'employee', 'email', 'held at', 'reason'], style: { head: [], border: [], compact: true } });
  for (const r of rows) table.push([r.id, r.employeeId, r.email, r.heldAt.toISOString(), r.reason]);
  return `${table.toString()}\nrelease: trainsync scim held --release ID   drop: trainsync scim held --drop ID\n`;
}

/** `status` section: one organisation's SCIM deactivations the guard holds. */
export const scimHeldSection: StatusSection = async (app, org) => ({
  title: 'SCIM deactivations held by the guard (release or drop: trainsync scim held)',
  rows: (await heldActions(app.db, org)).map((r) => ({ id: r.id, employee: r.employeeId, email: r.email, 'held at': r.heldAt, reason: r.reason })),
});

/** `trainsync scim held`: lists, releases or drops the deactivations the SCIM guard held. */
export function registerScimCommand(program: Command, deps: CommandDeps): void {
  const scim = program.command('scim').description('The SCIM 2.0 endpoint served by `worker` (docs/scim.md).');
  scim
    .command('held')
    .description('List the SCIM deactivations the guard held; --release or --drop one.')
    .option('--release <id>', 'apply the held deactivation now (it is enqueued like any other)', idOption)
    .option('--drop <id>', 'do not apply it: the employee stays active (the identity provider still shows them inactive)', idOption)
    .addHelpText(
      'after',
      `
The guard holds deactivations via SCIM beyond TRAINSYNC_SCIM_MAX_DISABLE within a sliding
hour (default: the feed's limit, the larger of 5 and 10% of the active employees), counted
per organisation. With several organisations, --org SLUG names the one (one at a time).
Exit status 0; 2 when the id is not a held action of that organisation.`,
    )
    .action(async (options: { release?: number; drop?: number }, command: Command) => {
      if (options.release !== undefined && options.drop !== undefined) {
        process.stderr.write('scim held: give --release or --drop, not both\n');
        process.exitCode = 2;
        return;
      }
      const config = deps.loadConfig();
      const org = selectOneOrg(config, requestedOrgs(command)).slug;
      const log = deps.createLogger(config);
      const app = await createApp(config, log, { jobs: deps.jobs, migrate: true });
      try {
        const changeDeps = { org, db: app.db, withPgClient: app.withPgClient, queue: app.queue, log, config, platform: () => app.platform(org) };
        if (options.release !== undefined) {
          const outcome = await releaseHeld(changeDeps, options.release);
          process.stdout.write(`released ${options.release}: ${outcome.enqueued.length} action(s) enqueued${outcome.pending.length > 0 ? ' (after earlier actions of the employee finish)' : ''}\n`);
        } else if (options.drop !== undefined) {
          await dropHeld(changeDeps, options.drop);
          process.stdout.write(`dropped ${options.drop}: the employee stays active\n`);
        } else {
          process.stdout.write(renderHeld(await heldActions(app.db, org), org));
        }
      } catch (error) {
        if (!(error instanceof HeldActionNotFound)) throw error;
        process.stderr.write(`scim held: ${error.message}\n`);
        process.exitCode = 2;
      } finally {
        await app.close();
      }
    });
}

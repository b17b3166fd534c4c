import { Command } from 'commander';
import type { CommandDeps } from './options/deps.ts';
import { EXIT_CODE_HELP } from './options/exit-codes.ts';
import { registerCancelCommand } from './cancel.ts';
import { registerCompletionCommand } from './completion.ts';
import { registerConsoleCommand } from './console.ts';
import { registerDemoCommand } from './demo.ts';
import { registerDoctorCommand } from './doctor.ts';
import { registerFeedCommand } from './feed-check.ts';
import { registerLoadFeedCommand } from './load-feed.ts';
import { registerLoginUrlCommand } from './login-url.ts';
import { registerMigrateCommand } from './migrate.ts';
import { registerPasswordCommand } from './password.ts';
import { registerProvisionCommand } from './provision.ts';
import { registerReconcileCommand } from './reconcile.ts';
import { provisioningAttentionAcross } from './status/provisioning-status.ts';
import { registerScimCommand } from './scim-held.ts';
import { heldPlansAcross, registerHeldCommand } from './held.ts';
import { registerSeatsCommand } from './seats.ts';
import { registerSimulatorCommand } from './simulator.ts';
import { registerStatusCommand } from './status.ts';
import { registerSyncCommand } from './sync.ts';
import { unfinishedWindowsAcross } from './status/unfinished-windows-status.ts';
import { webhookStatusAcross } from './status/webhook-status.ts';
import { scimQuarantineAcross } from './status/scim-quarantine-status.ts';
import { registerWorkerCommand } from './worker.ts';
import { addOrgOption } from './options/org-option.ts';

/** Every command of `trainsync`, built from the deps the composition root gives. */
export function buildProgram(deps: CommandDeps): Command {
  const program = new Command('trainsync')
    .description('Keeps a Postgres warehouse in step with the training platform, and applies HR-feed changes to its users.')
    .version('0.1.0')
    .option('-v, --verbose', 'on a terminal, show info log records too (default: warnings and errors only)')
    .showHelpAfterError('(add --help for usage)')
    // Before any subcommand exists: they inherit it, so every usage error (unknown option,
    // bad value) reaches src/cli.ts, which exits with the table's code 2 instead of 1.
    .exitOverride()
    .addHelpText(
      'after',
      `
Environment: TRAINSYNC_API_URL, TRAINSYNC_API_KEY, DATABASE_URL (trainsync's own login),
TRAINSYNC_OWNER_DATABASE_URL (the tables' owner, for migrations), REDIS_URL,
TRAINSYNC_REQUESTS_PER_SECOND (default 10), TRAINSYNC_SECRET_KEY, LOG_LEVEL, LOG_FORMAT;
TRAINSYNC_ORGS_FILE lists several organisations (then --org picks them). A .env file in the
working directory is read first (NAME=value lines; the environment wins over it).
See docs/reference.md; \`trainsync doctor\` checks them all. A TRAINSYNC_* variable trainsync does not
read (a typo: its setting keeps the default) is named in a warning, with the nearest known name.
Results go to stdout, logs to stderr. On a terminal: one progress line per resource, and
log records at warn and above as short lines (-v adds info; LOG_LEVEL, when set, rules).
Otherwise (a pipe, a file, a service): one JSON object per line (LOG_FORMAT overrides).`,
    )
    .addHelpText('afterAll', EXIT_CODE_HELP);
  addOrgOption(program);
  registerMigrateCommand(program, deps);
  registerWorkerCommand(program, deps);
  registerSyncCommand(program, deps);
  registerProvisionCommand(program, deps);
  registerLoadFeedCommand(program, deps);
  registerFeedCommand(program);
  registerPasswordCommand(program, deps);
  registerLoginUrlCommand(program, deps);
  registerSeatsCommand(program, deps);
  registerReconcileCommand(program, deps);
  registerStatusCommand(program, deps, [unfinishedWindowsAcross, provisioningAttentionAcross, webhookStatusAcross, heldPlansAcross, scimQuarantineAcross]);
  registerHeldCommand(program, deps);
  registerScimCommand(program, deps);
  registerConsoleCommand(program, deps);
  registerCancelCommand(program, deps);
  registerDoctorCommand(program, deps);
  registerSimulatorCommand(program);
  registerDemoCommand(program, deps);
  // Last: its script is made from every command registered before it.
  registerCompletionCommand(program);
  return program;
}

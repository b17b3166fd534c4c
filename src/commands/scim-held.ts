import { stderrText } from './render/terminal.ts';
import type { Command } from 'commander';
import type { CommandDeps } from './options/deps.ts';
import { heldPlanIdOption, loseAccessCountOption, runHeld } from './held.ts';
import { requestedOrgs } from './options/org-option.ts';

/** Said first by the alias: SCIM bursts are held plans like any other now. */
export const SCIM_HELD_NOTE = 'note: `trainsync scim held` is now `trainsync held`: held SCIM bursts, feeds and repairs are listed and decided there (--release is --approve, --drop is --reject)\n';

/** `trainsync scim held`: the alias of `trainsync held` it became (--release ID is --approve ID, --drop ID is --reject ID). */
export function registerScimCommand(program: Command, deps: CommandDeps): void {
  const scim = program.command('scim').description('The SCIM 2.0 endpoint served by `worker` (docs/scim.md).');
  scim
    .command('held')
    .description('Alias of `trainsync held`: held changes, SCIM bursts among them; --release (approve) or --drop (reject) one.')
    .option('--release <id>', 'approve the held plan (as `trainsync held --approve ID`)', heldPlanIdOption)
    .option('--confirm <n>', 'with --release: the number of people who will lose access', loseAccessCountOption)
    .option('--drop <id>', 'reject the held plan (as `trainsync held --reject ID`)', heldPlanIdOption)
    .addHelpText('after', '\nSee `trainsync held --help`. With several organisations, --org SLUG names the ones listed.')
    .action(async (options: { release?: number; confirm?: number; drop?: number }, command: Command) => {
      stderrText(SCIM_HELD_NOTE);
      const held = {
        ...(options.release === undefined ? {} : { approve: options.release }),
        ...(options.confirm === undefined ? {} : { confirm: options.confirm }),
        ...(options.drop === undefined ? {} : { reject: options.drop }),
      };
      process.exitCode = await runHeld(deps, held, requestedOrgs(command), (text) => void process.stdout.write(text));
    });
}

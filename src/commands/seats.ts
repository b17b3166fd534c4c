import type { Command } from 'commander';
import { PlatformError } from '../platform/errors.ts';
import type { CommandDeps } from './options/deps.ts';
import { requestedOrgs, selectOneOrg } from './options/org-option.ts';
import { withPlatform } from './options/with-platform.ts';

export function registerSeatsCommand(program: Command, deps: Pick<CommandDeps, 'loadConfig' | 'createLogger'>): void {
  program
    .command('seats')
    .description("Print the organisation's seats in use and total (GET users/seats).")
    .option('--json', 'print {"applicable", "seatsInUse", "totalSeats", "free"} as JSON')
    .addHelpText(
      'after',
      `
An organisation that is not on an unlimited-use plan has no seats: the platform answers
NO_UNLIMITED_PLAN and this prints "not applicable" (exit status 0). The hourly sync-seats
job records the same figures in training.seat_usage (per organisation). With several
organisations configured, name one with --org SLUG: its key asks.`,
    )
    .action(async (options: { json?: boolean }, command: Command) => {
      const config = deps.loadConfig();
      const org = selectOneOrg(config, requestedOrgs(command));
      const log = deps.createLogger(config);
      await withPlatform(config, log, async (platform) => {
        try {
          const { seatsInUse, totalSeats } = await platform.getSeats();
          const free = Math.max(0, totalSeats - seatsInUse);
          process.stdout.write(
            options.json
              ? `${JSON.stringify({ applicable: true, seatsInUse, totalSeats, free })}\n`
              : `seats in use: ${seatsInUse}\ntotal seats:  ${totalSeats}\nfree:         ${free}\n`,
          );
        } catch (error) {
          if (!(error instanceof PlatformError && error.code === 'NO_UNLIMITED_PLAN')) throw error;
          process.stdout.write(
            options.json
              ? `${JSON.stringify({ applicable: false, seatsInUse: null, totalSeats: null, free: null, code: error.code })}\n`
              : 'seats: not applicable (NO_UNLIMITED_PLAN: the organisation is not on an unlimited-use plan)\n',
          );
        }
      }, org);
    });
}

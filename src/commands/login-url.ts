import type { Command } from 'commander';
import type { CommandDeps } from './deps.ts';
import { withPlatform } from './with-platform.ts';
import { requestedOrgs, selectOneOrg } from './org-option.ts';

export function registerLoginUrlCommand(program: Command, deps: Pick<CommandDeps, 'loadConfig' | 'createLogger'>): void {
  program
    .command('login-url')
    .description('Print a one-time log-in URL that opens a course for a user (valid 5 minutes).')
    .argument('<email>', "the user's e-mail or platform user GUID")
    .argument('<courseId>', "the course's GUID")
    .addHelpText(
      'after',
      `
Calls POST /api/v2/login/autostart and prints the URL on stdout, nothing else, so it
can be captured: URL=$(trainsync login-url ann.smith@example.com <courseId>)
The URL logs the user in: hand it only to that user.

Exit status 1 with the platform's code on stderr when it refuses:
  USER_NOT_FOUND     no such user in this organisation
  USER_LOCKOUT       the user is locked out of (or disabled in) this organisation's training
  COURSE_NOT_FOUND   no such course (the platform may spell it COUSRE_NOT_FOUND)
  INVALID_MODEL      the course id is not a full GUID`,
    )
    .action(async (email: string, courseId: string, _options: unknown, command: Command) => {
      const config = deps.loadConfig();
      // The login URL is minted with the organisation's key (the user's access there): one at a time.
      const org = selectOneOrg(config, requestedOrgs(command));
      const log = deps.createLogger(config);
      await withPlatform(
        config,
        log,
        async (platform) => {
          const url = await platform.getAutostartLoginUrl(email.trim(), courseId.trim());
          process.stdout.write(`${url.toString()}\n`);
        },
        org,
      );
    });
}

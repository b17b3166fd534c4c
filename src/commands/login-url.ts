import type { Command } from 'commander';
import type { CommandDeps } from './options/deps.ts';
import { normaliseGuid } from '../platform/schemas.ts';
import { UsageError } from './options/exit-codes.ts';
import { withPlatform } from './options/with-platform.ts';
import { requestedOrgs, selectOneOrg } from './options/org-option.ts';

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
Exit status 2 when a courseId is not a GUID (a course's name, say), checked before
the platform is asked, or when the platform refuses the API key (401/403).`,
    )
    .action(async (email: string, courseArg: string, _options: unknown, command: Command) => {
      // A course's name (or a cut GUID) is a bad value, refused before the platform is asked.
      const courseId = normaliseGuid(courseArg);
      if (courseId === undefined) {
        throw new UsageError(`courseId ${JSON.stringify(courseArg)}: expected the course's GUID, e.g. 3f2b8c1e-5d4a-4b7e-9c21-0a6f1e2d3c4b, not its name; the GUIDs are in training.courses (course_id, name) after \`trainsync sync courses\``);
      }
      const config = deps.loadConfig();
      // The login URL is minted with the organisation's key (the user's access there): one at a time.
      const org = selectOneOrg(config, requestedOrgs(command));
      const log = deps.createLogger(config);
      await withPlatform(
        config,
        log,
        async (platform) => {
          const url = await platform.getAutostartLoginUrl(email.trim(), courseId);
          process.stdout.write(`${url.toString()}\n`);
        },
        org,
      );
    });
}

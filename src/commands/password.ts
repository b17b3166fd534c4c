import { stderrLine } from './render/terminal.ts';
import { scopedApp } from './options/scoped.ts';
import { InvalidArgumentError, type Command } from 'commander';
import { z } from 'zod';
import { createApp } from '../runtime/app.ts';
import { requireOrgPlatform, requireSecretKey } from '../config.ts';
import { requestedOrgs, selectOneOrg } from './options/org-option.ts';
import { requestPasswordChange } from '../provisioning/apply/password-request.ts';
import { generatePassword } from '../provisioning/apply/secrets.ts';
import type { CommandDeps } from './options/deps.ts';
import { readSecret } from './options/read-secret.ts';

function emailArgument(value: string): string {
  const parsed = z.email().safeParse(value.trim());
  if (!parsed.success) throw new InvalidArgumentError(`${JSON.stringify(value)} is not an e-mail address, e.g. ann.smith@example.com`);
  return parsed.data;
}

export function registerPasswordCommand(program: Command, deps: CommandDeps): void {
  program
    .command('password')
    .description("Set a user's password through a queued job; the password is read from standard input, or generated with --generate.")
    .argument('<email>', "the user's e-mail (the platform's userIdentifier)", emailArgument)
    .option('--generate', 'generate a strong password and print it once (store it at once: it is not kept anywhere)')
    .addHelpText(
      'after',
      `
The password never goes on the command line (ps and shell history would show it):
  printf '%s' "$NEW_PASSWORD" | trainsync password ann.smith@example.com
  trainsync password ann.smith@example.com            # on a terminal: prompts, no echo
  trainsync password ann.smith@example.com --generate # prints the new password once
One trailing newline of standard input is dropped.

The job carries the password encrypted with TRAINSYNC_SECRET_KEY (AES-256-GCM, bound to
the e-mail); it is never written to a log, to Postgres or to Redis in plain text. Works
only for accounts created through the API (the platform answers INVALID_USER_TYPE
otherwise); a password the platform finds too weak fails with INVALID_PASSWORD.
Exit status is non-zero when the change failed; the platform's code is printed.`,
    )
    .action(async (email: string, options: { generate?: boolean }, command: Command) => {
      const config = deps.loadConfig();
      // The account is the organisation's (its key sets the password): one at a time.
      const org = selectOneOrg(config, requestedOrgs(command));
      // Refuse before asking for a password that could not be queued or sent.
      requireSecretKey(config);
      requireOrgPlatform(org);
      const password = options.generate ? generatePassword() : await readSecret();
      if (password.length === 0) throw new Error('no password on standard input; pipe one in, or use --generate');
      const log = deps.createLogger(config);
      const app = await createApp(config, log, { jobs: deps.jobs, migrate: true });
      let exitCode = 0;
      try {
        const row = await requestPasswordChange(scopedApp(app, org.slug), email, password);
        if (row.status === 'succeeded') {
          process.stdout.write(options.generate ? `password set for ${email}; it is shown once, store it now:\n${password}\n` : `password set for ${email}\n`);
        } else {
          stderrLine(`password for ${email} not set: ${row.errorCode ?? row.status}: ${row.errorMessage ?? ''}`);
          exitCode = 1;
        }
      } finally {
        await app.close();
      }
      process.exitCode = exitCode;
    });
}

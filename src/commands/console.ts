import { stderrLine } from './render/terminal.ts';
import { DEFAULT_ORG } from '../settings/orgs-file.ts';
import type { Command } from 'commander';
import { sql } from 'kysely';
import { startConsole } from '../console/server.ts';
import { hashConsolePassword } from '../settings/console-users.ts';
import { createApp } from '../runtime/app.ts';
import { CHECK_TIMEOUT_MS, runHealthChecks } from '../runtime/health-server.ts';
import type { CommandDeps } from './options/deps.ts';
import { provisionDeps } from './options/provision-deps.ts';
import { readSecret } from './options/read-secret.ts';

export function registerConsoleCommand(program: Command, deps: CommandDeps): void {
  const command = program
    .command('console')
    .description('Serve the operator console alone (the worker serves it too): runs, provisioning, held plans, people, webhooks, queues.')
    .addHelpText(
      'after',
      `
Off until TRAINSYNC_CONSOLE_USERS lists a user (name:role:hash, role viewer or operator; make the
hash with \`trainsync console hash-password\`; name:role:hash:acme+globex limits a user to those
organisations, and bull-board is then not theirs). Served on TRAINSYNC_CONSOLE_HOST:TRAINSYNC_CONSOLE_PORT
(default 127.0.0.1:9467); put a TLS proxy in front and set TRAINSYNC_CONSOLE_TRUST_PROXY to its
address (e.g. 127.0.0.1), so its X-Forwarded-For and -Proto are believed and no one else's.
Approved plans and retried actions are applied by a running worker. See docs/operator.md, "Console".`,
    )
    .action(async () => {
      const config = deps.loadConfig();
      const log = deps.createLogger(config);
      if (!config.TRAINSYNC_CONSOLE_USERS) {
        stderrLine('the console is off: set TRAINSYNC_CONSOLE_USERS (name:role:hash entries; `trainsync console hash-password` makes a hash)');
        process.exitCode = 2;
        return;
      }
      const app = await createApp(config, log, { jobs: deps.jobs, migrate: true, redis: 'persistent' });
      const server = await startConsole({
        config,
        scopes: app.scopes,
        queue: app.queue,
        log,
        repair: (org) => provisionDeps(app, org),
        health: () => runHealthChecks({ postgres: () => sql`select 1`.execute(app.scopes.unscoped), redis: () => app.queue.redis.check(CHECK_TIMEOUT_MS, { failFast: true }) }),
      });
      process.stdout.write(`console: http://${server!.address.includes(':') ? `[${server!.address}]` : server!.address}:${server!.port}/\n`);
      await new Promise<void>((resolve) => {
        process.once('SIGTERM', resolve);
        process.once('SIGINT', resolve);
      });
      await server!.close();
      await app.close();
    });
  command
    .command('hash-password')
    .description('Read a password from standard input (never the command line) and print its scrypt hash for TRAINSYNC_CONSOLE_USERS.')
    .action(async () => {
      const password = await readSecret(process.stdin, process.stderr, 'Console password: ');
      if (password.length < 12) {
        stderrLine('a console password needs at least 12 characters');
        process.exitCode = 2;
        return;
      }
      process.stdout.write(`${await hashConsolePassword(password)}\n`);
    });
}

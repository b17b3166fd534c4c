import { DEFAULT_ORG } from '../settings/orgs-file.ts';
import type { Command } from 'commander';
import { createApp } from '../runtime/app.ts';
import { loadHttpClient } from '../platform/http.ts';
import { observeScim } from '../runtime/metrics.ts';
import { CHECK_TIMEOUT_MS, runHealthChecks, startHealthServer } from '../runtime/health-server.ts';
import { startConsole } from '../console/server.ts';
import { provisionDeps } from './options/provision-deps.ts';
import { QUEUE_NAMES, SYNC_QUEUE, type QueueName } from '../queue/names.ts';
import { sql } from 'kysely';
import { registerSchedulers, watchSchedulers } from '../queue/schedulers.ts';
import { recordSyncSchedules } from '../sync/sync-schedules.ts';
import { startScimService } from '../scim/service.ts';
import { startWebhookService, webhookOrgs } from '../webhooks/service.ts';
import { endpointLines } from './options/worker-endpoints.ts';
import type { CommandDeps } from './options/deps.ts';
import { EXIT, exitWith } from './options/exit-codes.ts';
import { showJobLines } from './render/worker-lines.ts';
import { fitText } from './render/terminal.ts';
import { utcMinute } from '../lib/utc-minute.ts';

export function registerWorkerCommand(program: Command, deps: CommandDeps): void {
  // Every schedule the catalog declares, so the help never leaves one out.
  const schedules = deps.jobs
    .flatMap((job) => (job.schedule ? [`  ${job.schedule.setting.padEnd(26)} ${job.name.padEnd(14)} default "${job.schedule.default}"`] : []))
    .join('\n');
  program
    .command('worker')
    .description('Process every queue until stopped: runs scheduled syncs and provisioning jobs, serves /healthz and /metrics, stops cleanly on SIGTERM.')
    .option('--queues <names>', `comma-separated queues to process (${QUEUE_NAMES.join(', ')})`, QUEUE_NAMES.join(','))
    .option('--no-schedules', 'do not register the cron schedules (another worker does)')
    .option('--print-endpoints', 'print one line per endpoint served, with its URL, also when stdout is not a terminal (on one, they are always printed)')
    .addHelpText(
      'after',
      `
Schedules (cron lines, UTC; each checked at start, naming the variable):
${schedules}
Any number of workers may run against one Redis:
each scheduled sync runs once, and no two syncs of one resource ever run at once.
Every endpoint listens on loopback (127.0.0.1) unless its *_HOST variable says otherwise
(0.0.0.0: every interface; the container image sets that).
Metrics and health: http://$TRAINSYNC_METRICS_HOST:$TRAINSYNC_METRICS_PORT/metrics and /healthz
(default port 9464; TRAINSYNC_METRICS_TOKEN makes /metrics ask for a bearer token).
Webhooks: POST http://$TRAINSYNC_WEBHOOK_HOST:$TRAINSYNC_WEBHOOK_PORT/webhooks/platform (default
port 9465), served only when TRAINSYNC_WEBHOOK_SECRET is set; see docs/operator.md, "Webhooks".
SCIM 2.0: http://$TRAINSYNC_SCIM_HOST:$TRAINSYNC_SCIM_PORT/scim/v2 (default port 9466), served only
when TRAINSYNC_SCIM_TOKEN or TRAINSYNC_SCIM_TOKEN_FILE is set; see docs/scim.md.
On a terminal (or with --print-endpoints) it prints one line per endpoint with its URL,
e.g. "health    http://127.0.0.1:9464/healthz"; logs go to stderr.`,
    )
    .action(async (options: { queues: string; schedules: boolean; printEndpoints?: boolean }) => {
      const config = deps.loadConfig();
      const log = deps.createLogger(config);
      const queues = parseQueues(options.queues);
      // Every worker calls the platform: its HTTP client loads beside the connections, not in the first job.
      loadHttpClient().catch(() => undefined);
      // Redis connections retry forever here; an outage is logged when it starts and when it ends.
      const app = await createApp(config, log, { jobs: deps.jobs, migrate: true, redis: 'persistent' });
      // First: it answers (503 naming redis) while the workers below wait for an unreachable Redis.
      const checks = {
        postgres: () => sql`select 1`.execute(app.scopes.unscoped),
        // Fails at once while the connection is down: a PING would only queue behind the outage.
        redis: () => app.queue.redis.check(CHECK_TIMEOUT_MS, { failFast: true }),
      };
      const health = await startHealthServer({ port: config.TRAINSYNC_METRICS_PORT, host: config.TRAINSYNC_METRICS_HOST, token: config.TRAINSYNC_METRICS_TOKEN, metrics: app.metrics, log, checks });
      // Off unless TRAINSYNC_CONSOLE_USERS is set (docs/operator.md, "Console").
      const consoleServer = await startConsole({ config, scopes: app.scopes, queue: app.queue, log, health: () => runHealthChecks(checks), repair: (org) => provisionDeps(app, org) });
      // Off unless TRAINSYNC_WEBHOOK_SECRET is set (docs/operator.md, "Webhooks"). Before the
      // workers: events are stored (and acknowledged) even while Redis is unreachable.
      const webhooks = await startWebhookService({ config, scopes: app.scopes, queue: app.queue, metrics: app.metrics, log });
      // Off unless TRAINSYNC_SCIM_TOKEN(_FILE) is set (docs/scim.md).
      const scim = await startScimService({
        config, scopes: app.scopes, locks: app.locks, queue: app.queue, platform: app.platform, log,
        onQuarantined: (org, count) => app.metrics.scimQuarantined.inc({ org }, count),
        onAnswered: observeScim(app.metrics),
      });
      // A person who started it sees where it answers (before the workers, which wait for an
      // unreachable Redis); logs stay JSON lines on stderr elsewhere.
      if (process.stdout.isTTY || options.printEndpoints) {
        const lines = endpointLines({
          // What is reachable from other machines (bound to every interface) is marked so.
          health: { port: health.port, host: health.address },
          ...(webhooks ? { webhooks: { port: webhooks.port, host: config.TRAINSYNC_WEBHOOK_HOST, orgs: webhookOrgs(config).map((o) => o.slug) } } : {}),
          ...(scim ? { scim: { port: scim.port, host: config.TRAINSYNC_SCIM_HOST, orgs: scim.orgs } } : {}),
          ...(consoleServer ? { console: { port: consoleServer.port, host: consoleServer.address } } : {}),
        });
        process.stdout.write(`${lines.join('\n')}\n`);
      }
      const worker = await app.queue.startWorkers(queues);
      // On a terminal: a line per job started and ended, and lines when it stops (stdout, beside the endpoints).
      const onTerminal = process.stdout.isTTY === true;
      const say = (line: string): void => void process.stdout.write(fitText(line));
      const stopLines = onTerminal ? showJobLines(worker.workers, say) : (): void => undefined;
      if (onTerminal) say(`${utcMinute(new Date())}  waiting for jobs on ${queues.join(', ')} (Ctrl-C stops)`);
      let stopWatching = (): void => undefined;
      if (options.schedules && queues.includes(SYNC_QUEUE)) {
        await registerSchedulers(app.queue, config, log);
        // What the freshness view and the "data stale" alert compare each resource's last complete run with.
        await recordSyncSchedules(app.scopes, app.catalog, config).catch((error: unknown) =>
          log.warn({ err: error }, 'could not record the sync schedules in trainsync.sync_schedules (training.freshness and the stale-data alert read them); they are recorded at the next start'),
        );
        // An emptied or failed-over Redis loses them: registered again on reconnect and every TRAINSYNC_SCHEDULE_CHECK_MS.
        stopWatching = watchSchedulers(app.queue, config, log);
      }
      const signal = await new Promise<'SIGTERM' | 'SIGINT'>((resolve) => {
        const stop = (signal: 'SIGTERM' | 'SIGINT'): void => {
          log.info({ signal }, 'stopping: no new jobs; running jobs checkpoint and go back to the queue');
          if (onTerminal) say(`${utcMinute(new Date())}  stopping (${signal === 'SIGINT' ? 'Ctrl-C' : signal}): no new jobs; running jobs checkpoint and go back to the queue`);
          resolve(signal);
        };
        process.once('SIGTERM', () => stop('SIGTERM'));
        process.once('SIGINT', () => stop('SIGINT'));
      });
      // Ctrl-C is 130 from every command (docs/reference.md, "Exit codes"); SIGTERM, a service manager's stop, is a clean 0.
      if (signal === 'SIGINT') exitWith(EXIT.interrupted, 'interrupted (Ctrl-C): the worker stopped; jobs it was running went back to the queue and resume from their checkpoints');
      stopWatching();
      // No new events first: one refused meanwhile is delivered again by the platform.
      await webhooks?.close();
      await consoleServer?.close();
      await scim?.close();
      const { forced } = await worker.close();
      stopLines();
      if (onTerminal) say(`${utcMinute(new Date())}  stopped${forced ? ' (a job did not stop in time; its lock expires for another worker)' : ''}`);
      await health.close();
      if (forced) {
        // A job stuck inside a statement keeps its pooled connection, so closing the pool would
        // wait for it forever; the CLI exits shortly after the command returns (src/cli.ts),
        // which ends that connection, and the job's BullMQ lock expires for another worker.
        void app.close().catch(() => undefined);
        return;
      }
      await app.close();
    });
}

function parseQueues(value: string): QueueName[] {
  const names = value.split(',').map((name) => name.trim()).filter(Boolean);
  const unknown = names.filter((name) => !(QUEUE_NAMES as readonly string[]).includes(name));
  if (unknown.length > 0 || names.length === 0) {
    throw new Error(`--queues: unknown queue ${unknown.join(', ') || '(none given)'}; expected a comma-separated list of ${QUEUE_NAMES.join(', ')}`);
  }
  return names as QueueName[];
}

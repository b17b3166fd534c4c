import type { Command } from 'commander';
import type { Config } from '../config.ts';
import type { OrgSettings } from '../settings/orgs-file.ts';
import { errorMessage } from '../lib/errors.ts';
import type { Logger } from '../runtime/log.ts';
import { createJobCatalog } from '../queue/catalog.ts';
import { createJobQueue } from '../queue/job-queue.ts';
import { QUEUE_NAMES } from '../queue/names.ts';
import { scheduleTable } from '../queue/schedulers.ts';
import type { CommandDeps } from './options/deps.ts';
import { checkConfiguration, checkPlatform, checkPostgres, checkRedis, checkWebhook, type CheckResult } from './doctor/doctor-checks.ts';
import { checkAppRoleLine, checkLockSession, checkWorkerLoginLines } from './doctor/doctor-sessions.ts';
import { EXIT, exitWith } from './options/exit-codes.ts';
import { requestedOrgs, selectOrgs } from './options/org-option.ts';
import { lineWidth, wrapLine } from './render/terminal.ts';

/** `trainsync doctor`: every part a night's run needs, one line each with the fix. Creates and changes nothing. */
export function registerDoctorCommand(program: Command, deps: CommandDeps): void {
  program
    .command('doctor')
    .description('Check the set-up before the first night: configuration, Postgres, Redis, each organisation\'s platform key, webhooks, the worker. Changes nothing.')
    .option('--json', 'print the checks as JSON')
    .addHelpText(
      'after',
      `
One line per check: ok, warn or FAIL, and the fix. Checks every variable (cron lines
included); Postgres (reachable, version, pending migrations, the trainsync_reader role;
the lock session, TRAINSYNC_LOCK_DATABASE_URL or DATABASE_URL: reachable and a session of
its own, not a transaction-mode pool; the login of DATABASE_URL can take trainsync_app,
and cannot bypass row security: FAIL for a superuser, BYPASSRLS, an owner of the tables or
a member of one, or a table with an organisation that does not force row security);
Redis (reachable, version, maxmemory-policy noeviction, persistence); the platform (key
accepted, page size seen, seats endpoint offered) of every organisation, or of those
named with --org (lines of a named organisation start with [slug]); the webhook port,
secrets and paths; the
worker (connected, schedules registered). A service that refuses the connection fails at
once, naming its URL (password masked) and how to start it.

For doctor: 1 a check failed; 2 the configuration is refused (a variable, a missing
migration, a key the platform refuses, a lock session that is not one, a login that
cannot take trainsync_app).

Examples:
  trainsync doctor
  trainsync doctor --org acme-north
  trainsync doctor --json | jq '.[] | select(.level != "ok")'`,
    )
    .action(async (options: { json?: boolean }, command: Command) => {
      const results = await runChecks(deps, requestedOrgs(command));
      if (options.json) process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
      else process.stdout.write(`${results.map((result) => renderCheck(result)).join('\n')}\n`);
      const failed = results.filter((r) => r.level === 'fail');
      if (failed.length > 0) {
        exitWith(failed.some((r) => r.refuses) ? EXIT.refused : EXIT.failed, `doctor: ${failed.length} check${failed.length === 1 ? '' : 's'} failed (first: ${failed[0]!.check}: ${failed[0]!.fix ?? failed[0]!.detail})`);
      }
    });
}

/** The column a check's detail starts in: `FAIL  redis memory      ` */
const DETAIL_AT = 24;

/**
 * `ok   postgres      reachable …` and, under a warning or failure, `fix: …`; each wrapped
 * at `width` (when known) with its continuation under the text it continues.
 */
export function renderCheck(result: CheckResult, width: number | undefined = lineWidth()): string {
  const mark = result.level === 'ok' ? 'ok  ' : result.level === 'warn' ? 'warn' : 'FAIL';
  const indent = ' '.repeat(DETAIL_AT);
  const lines = [`${mark}  ${result.check.padEnd(17)} ${result.detail}`];
  if (result.fix && result.level !== 'ok') lines.push(`${indent}fix: ${result.fix}`);
  if (width === undefined) return lines.join('\n');
  return [...wrapLine(lines[0]!, width, indent), ...(lines[1] === undefined ? [] : wrapLine(lines[1], width, `${indent}     `))].join('\n');
}

/** Every organisation unless some are named (doctor checks them all by default, unlike the commands that work on one). */
function doctorOrgs(config: Config, requested: readonly string[]): OrgSettings[] {
  return requested.length === 0 ? [...config.orgs] : selectOrgs(config, requested);
}

async function runChecks(deps: CommandDeps, requested: readonly string[]): Promise<CheckResult[]> {
  const { config, results } = checkConfiguration(deps.loadConfig);
  if (!config) return results;
  const orgs = doctorOrgs(config, requested);
  const log = deps.createLogger(config);
  // Postgres and Redis at once: each fails on its own within the connect timeout.
  const [postgres, redis] = await Promise.all([checkPostgres(config), checkRedis(config)]);
  results.push(...postgres.results);
  // The lock session and trainsync_app: once Postgres answered (a refused DATABASE_URL is said once, above).
  const reached = postgres.results.some((r) => r.check === 'postgres' && r.level === 'ok');
  if (reached || config.TRAINSYNC_LOCK_DATABASE_URL) results.push(await checkLockSession(config));
  if (reached) results.push(await checkAppRoleLine(config), ...(await checkWorkerLoginLines(config)));
  results.push(...redis.results);
  let workerAlive = false;
  if (redis.reachable) {
    const worker = await checkWorker(config, log, deps);
    workerAlive = worker.alive;
    results.push(...worker.results);
    // One at a time: each has its own key and budget, and the lines stay in the file's order.
    for (const org of orgs) results.push(...(await checkPlatform(config, log, org)));
  } else {
    results.push({ check: 'platform', level: 'warn', detail: `not checked (${orgs.map((o) => o.slug).join(', ')}): the request budget lives in Redis`, fix: 'fix Redis first' });
    results.push({ check: 'worker', level: 'warn', detail: 'not checked: Redis is unreachable', fix: 'fix Redis first' });
  }
  results.push(await checkWebhook(config, workerAlive, orgs));
  return results;
}

/** A worker connected to every queue, and the schedules registered with this configuration's cron lines. */
async function checkWorker(config: Config, log: Logger, deps: CommandDeps): Promise<{ alive: boolean; results: CheckResult[] }> {
  const queue = createJobQueue(
    config,
    {
      catalog: createJobCatalog(deps.jobs),
      services: () => {
        throw new Error('doctor runs no job');
      },
      log,
    },
    { redis: 'one-shot' },
  );
  try {
    const names = await Promise.all(QUEUE_NAMES.map(async (name) => ({ name, workers: new Set(await queue.workerNames(name)) })));
    const all = new Set(names.flatMap((n) => [...n.workers]));
    const missing = names.filter((n) => n.workers.size === 0).map((n) => n.name);
    const results: CheckResult[] = [];
    if (all.size === 0) {
      results.push({ check: 'worker', level: 'warn', detail: 'no worker connected: nothing runs the schedules (sync and provision run their own jobs meanwhile)', fix: 'start `trainsync worker` (or `docker compose up -d worker`)' });
    } else if (missing.length > 0) {
      results.push({ check: 'worker', level: 'warn', detail: `${[...all].join(', ')} connected, but no worker serves ${missing.join(', ')}`, fix: 'start a worker for every queue (`trainsync worker` serves all)' });
    } else results.push({ check: 'worker', level: 'ok', detail: `alive: ${[...all].join(', ')}` });
    const registered = new Map((await queue.schedules()).map((s) => [s.id, s.pattern ?? '']));
    const wanted = scheduleTable(queue.catalog, config);
    const absent = wanted.filter((w) => !registered.has(w.id)).map((w) => w.id);
    const differs = wanted.filter((w) => registered.has(w.id) && registered.get(w.id) !== w.pattern).map((w) => `${w.id} "${registered.get(w.id)}" (here "${w.pattern}")`);
    if (absent.length > 0) results.push({ check: 'schedules', level: 'warn', detail: `not registered: ${absent.join(', ')}`, fix: 'start `trainsync worker` (it registers them)' });
    else if (differs.length > 0) results.push({ check: 'schedules', level: 'warn', detail: `registered with other cron lines: ${differs.join('; ')}`, fix: 'restart the worker with this configuration' });
    else results.push({ check: 'schedules', level: 'ok', detail: `${wanted.length} registered, as configured` });
    return { alive: all.size > 0, results };
  } catch (error) {
    return { alive: false, results: [{ check: 'worker', level: 'fail', detail: errorMessage(error), fix: 'check REDIS_URL' }] };
  } finally {
    await queue.close();
  }
}

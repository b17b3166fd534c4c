import { writeFile } from 'node:fs/promises';
import { InvalidArgumentError, type Command } from 'commander';
import { loadConfig, type Config } from '../config.ts';
import { parseIsoDay } from '../lib/calendar-day.ts';
import { DEMO_API_KEY, startSimulator, type RunningSimulator, type SimulatorOptions } from '../simulator/index.ts';

function wholeNumber(min: number) {
  return (value: string): number => {
    if (!/^\d+$/.test(value.trim()) || Number(value) < min) throw new InvalidArgumentError(`expected a whole number of at least ${min}, e.g. ${Math.max(min, 1)}`);
    return Number(value);
  };
}

function isoDate(value: string): string {
  if (parseIsoDay(value) !== value) throw new InvalidArgumentError('expected a date that exists, as YYYY-MM-DD, e.g. 2024-01-01');
  return value;
}

function webhookUrl(value: string): string {
  if (!/^https?:\/\/\S+$/.test(value.trim())) throw new InvalidArgumentError('expected an http(s) URL, e.g. http://127.0.0.1:9465/webhooks/platform');
  return value.trim();
}

function base64Secret(value: string): string {
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(value.trim()) || Buffer.from(value.trim(), 'base64').length < 16) {
    throw new InvalidArgumentError('expected base64 text of at least 16 bytes, e.g. the output of `openssl rand -base64 32`');
  }
  return value.trim();
}

function signatureEncoding(value: string): 'base64' | 'hex' {
  if (value !== 'base64' && value !== 'hex') throw new InvalidArgumentError('expected base64 or hex');
  return value;
}

function boundsMode(value: string): 'exclusive-instant' | 'inclusive-date' {
  if (value !== 'exclusive-instant' && value !== 'inclusive-date') throw new InvalidArgumentError('expected exclusive-instant or inclusive-date');
  return value;
}

interface SimulatorCliOptions {
  host: string;
  port: number;
  seed: number;
  apiKey?: string;
  results?: number;
  users?: number;
  courses?: number;
  groups?: number;
  from?: string;
  to?: string;
  totalSeats?: number;
  latencyMs: number;
  rateLimitEvery: number;
  retryAfter: string;
  serverErrorEvery: number;
  malformedEvery: number;
  driftEvery: number;
  driftCount: number;
  removeEvery: number;
  unlimitedPlan: boolean;
  usersEndpoint: boolean;
  dateBounds: 'exclusive-instant' | 'inclusive-date';
  webhookUrl?: string;
  webhookSecret?: string;
  webhookSignatureHeader?: string;
  webhookEncoding: 'base64' | 'hex';
  orgs: number;
  overlap: boolean;
  orgsFile?: string;
}

/** The most organisations `--orgs` serves: enough for the orgs bench (20) with room. */
const MAX_ORGS = 100;

/** `--orgs N`: organisation i (from 1) is named orgNN and accepts demo-key-i. Not secrets. */
export function demoOrganisations(n: number): Array<{ name: string; apiKey: string }> {
  return Array.from({ length: n }, (_, i) => ({ name: `org${String(i + 1).padStart(2, '0')}`, apiKey: `demo-key-${i + 1}` }));
}

/** The variable an organisation's secret goes in, as an orgs file refers to it: org01 -> ORG01_API_KEY. */
function secretVariable(name: string, what: 'API_KEY' | 'WEBHOOK_SECRET'): string {
  return `${name.toUpperCase().replace(/[^A-Z0-9]+/g, '_')}_${what}`;
}

/** A TRAINSYNC_ORGS_FILE for the organisations served: secrets by reference, in the variables printed beside it. */
function orgsFileFor(sim: RunningSimulator): string {
  const organisations = sim.organisations.map((o) => ({
    slug: o.name,
    name: o.name,
    apiUrl: sim.url,
    apiKey: { env: secretVariable(o.name, 'API_KEY') },
    ...(o.webhooks.settings.url === undefined ? {} : { webhookSecret: { env: secretVariable(o.name, 'WEBHOOK_SECRET') } }),
  }));
  return `${JSON.stringify({ organisations }, null, 2)}\n`;
}

/**
 * `trainsync simulator`: serves the platform simulator until SIGINT/SIGTERM. The key
 * it accepts is --api-key, else TRAINSYNC_API_KEY, else the fixed demo key; with
 * --orgs N, N organisations accept demo-key-1…N, one each.
 */
export interface SimulatorCommandDeps {
  /** Default: loadConfig() of the process environment. */
  loadConfig?: () => Config;
  /** Where the URL and key are printed. Default: process.stdout. */
  write?: (text: string) => void;
  /** Resolves when the simulator should stop. Default: the first SIGINT or SIGTERM. */
  stopped?: () => Promise<void>;
}

function untilSignal(): Promise<void> {
  return new Promise<void>((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
}

export function registerSimulatorCommand(program: Command, deps: SimulatorCommandDeps = {}): void {
  program
    .command('simulator')
    .description('Serve a simulator of the training platform API v2 (seeded demo data, optional faults) until stopped.')
    .option('--host <host>', 'interface to listen on', '127.0.0.1')
    .option('--port <n>', 'TCP port (0 = any free port)', wholeNumber(0), 0)
    .option('--seed <n>', 'data seed: the same seed always gives the same data', wholeNumber(0), 1)
    .option('--api-key <key>', 'API key to accept (default: TRAINSYNC_API_KEY, else the demo key)')
    .option('--results <n>', 'number of results (default 3000)', wholeNumber(0))
    .option('--users <n>', 'number of users (default 300)', wholeNumber(0))
    .option('--courses <n>', 'number of courses (default 40)', wholeNumber(0))
    .option('--groups <n>', 'number of groups (default 5)', wholeNumber(0))
    .option('--from <date>', 'first day results are dated on (default 2024-01-01)', isoDate)
    .option('--to <date>', 'last day results are dated on (default 2024-12-31)', isoDate)
    .option('--total-seats <n>', 'seats of the plan (default users + 50)', wholeNumber(0))
    .option('--latency-ms <n>', 'delay added to every response', wholeNumber(0), 0)
    .option('--rate-limit-every <n>', 'every Nth API request answers 429 (0 = never)', wholeNumber(0), 0)
    .option('--retry-after <value>', 'Retry-After on those 429s: seconds or an HTTP date', '1')
    .option('--server-error-every <n>', 'every Nth API request answers 500/502/503 (0 = never)', wholeNumber(0), 0)
    .option('--malformed-every <n>', 'every Nth result is served malformed in list pages (0 = never)', wholeNumber(0), 0)
    .option('--drift-every <n>', 'new results arrive at the newest end of the list after every Nth results page (0 = never)', wholeNumber(0), 0)
    .option('--drift-count <n>', 'results per arrival', wholeNumber(1), 1)
    .option('--remove-every <n>', 'a result on a page already served is deleted after every Nth results page (0 = never)', wholeNumber(0), 0)
    .option('--date-bounds <mode>', 'startDate/endDate semantics: exclusive-instant or inclusive-date', boundsMode, 'exclusive-instant')
    .option('--no-unlimited-plan', 'GET users/seats answers 400 NO_UNLIMITED_PLAN')
    .option('--no-users-endpoint', 'GET users answers 404, as on a platform without it')
    .option('--webhook-url <url>', 'deliver signed webhook events (COURSE_COMPLETE…) to this URL, e.g. http://127.0.0.1:9465/webhooks/platform', webhookUrl)
    .option('--webhook-secret <base64>', 'validation secret the events are signed with (default: TRAINSYNC_WEBHOOK_SECRET, else a random one; printed)', base64Secret)
    .option('--webhook-signature-header <name>', 'name of the signature header (default Platform-Signature)')
    .option('--webhook-encoding <enc>', 'signature encoding: base64 or hex', signatureEncoding, 'base64')
    .option('--orgs <n>', `serve n organisations (up to ${MAX_ORGS}), one per key: org01 accepts demo-key-1, org02 demo-key-2… (default: one, with the key above)`, wholeNumber(1), 1)
    .option('--overlap', 'with --orgs 2 or more: the first 3 course GUIDs are listed by every organisation (each its own pass rate), and one user belongs to org01 and org02')
    .option('--orgs-file <path>', 'with --orgs: write a TRAINSYNC_ORGS_FILE for them there (keys by reference: export the variables printed)')
    .addHelpText(
      'after',
      `
Point trainsync at it with the two lines it prints (TRAINSYNC_API_URL, TRAINSYNC_API_KEY).
Faults can also be changed while it runs, and traffic inspected, without the key:
  curl -X POST <url>/__simulator/faults -d '{"rateLimitEvery":5,"latencyMs":50}'
  curl <url>/__simulator/requests/summary     (counts per route, most requests in any 1 s)
  curl <url>/__simulator/state/summary
Several organisations (--orgs 3 --overlap): each key sees only its organisation's data; put
{org} in --webhook-url to give each its own target, e.g. http://127.0.0.1:9465/webhooks/platform/{org}.
Each organisation signs its webhooks with its own secret (printed; --webhook-secret is org01's).
Add ?org=<name or GUID> to the calls below to mean another organisation than the first:
  curl <url>/__simulator/organisations                  (each one's GUID and counts, and the overlap)
  curl <url>/__simulator/requests/organisations         (requests per key: most in any 1 s)
  curl '<url>/__simulator/state/summary?org=org02'
Webhooks (with --webhook-url): complete a course for a user, and see the deliveries:
  curl -X POST <url>/__simulator/webhooks/complete -d '{"userId":"<guid>","copies":2}'
  curl -X POST <url>/__simulator/webhooks/complete -d '{"childCourses":3}'     (a multi-course module)
  curl -X POST <url>/__simulator/webhooks/test                                 (TEST_EVENT, unsigned)
  curl <url>/__simulator/webhooks/deliveries?recent=10`,
    )
    .action(async (options: SimulatorCliOptions) => {
      const config = (deps.loadConfig ?? (() => loadConfig()))();
      const sizes: SimulatorOptions['sizes'] = {
        ...(options.results === undefined ? {} : { results: options.results }),
        ...(options.users === undefined ? {} : { users: options.users }),
        ...(options.courses === undefined ? {} : { courses: options.courses }),
        ...(options.groups === undefined ? {} : { groups: options.groups }),
        ...(options.from === undefined ? {} : { resultsFrom: options.from }),
        ...(options.to === undefined ? {} : { resultsTo: options.to }),
      };
      if (options.orgs > MAX_ORGS) throw new InvalidArgumentError(`--orgs: at most ${MAX_ORGS}`);
      if (options.apiKey !== undefined && options.orgs > 1) throw new InvalidArgumentError('--api-key serves one organisation; with --orgs the keys are demo-key-1…N');
      if (options.orgsFile !== undefined && options.orgs < 2) throw new InvalidArgumentError('--orgs-file needs --orgs 2 or more');
      if (options.overlap && options.orgs < 2) throw new InvalidArgumentError('--overlap needs --orgs 2 or more');
      const several = options.orgs > 1;
      // Like the API key: the one trainsync is configured with, so both ends agree without copying.
      const secret = options.webhookSecret ?? (config.TRAINSYNC_WEBHOOK_SECRET?.[0] ? config.TRAINSYNC_WEBHOOK_SECRET[0].toString('base64') : undefined);
      const targetOf = (name: string): string | undefined => options.webhookUrl?.replaceAll('{org}', encodeURIComponent(name));
      const sim = await startSimulator({
        host: options.host,
        port: options.port,
        seed: options.seed,
        ...(several
          ? {
              organisations: demoOrganisations(options.orgs).map((o, i) => ({
                ...o,
                webhooks: { url: targetOf(o.name), ...(i === 0 && secret !== undefined ? { secret } : {}) },
              })),
              overlap: options.overlap,
            }
          : { apiKey: options.apiKey ?? config.TRAINSYNC_API_KEY ?? DEMO_API_KEY }),
        sizes,
        ...(options.totalSeats === undefined ? {} : { totalSeats: options.totalSeats }),
        unlimitedPlan: options.unlimitedPlan,
        usersEndpoint: options.usersEndpoint,
        dateBounds: options.dateBounds,
        webhooks: {
          ...(several ? {} : { url: options.webhookUrl }),
          encoding: options.webhookEncoding,
          ...(several || secret === undefined ? {} : { secret }),
          ...(options.webhookSignatureHeader === undefined ? {} : { header: options.webhookSignatureHeader }),
        },
        faults: {
          latencyMs: options.latencyMs,
          rateLimitEvery: options.rateLimitEvery,
          retryAfter: options.retryAfter,
          serverErrorEvery: options.serverErrorEvery,
          malformedResultEvery: options.malformedEvery,
          driftEvery: options.driftEvery,
          driftCount: options.driftCount,
          removeEvery: options.removeEvery,
        },
      });
      const s = sim.state;
      const write = deps.write ?? ((text: string): void => void process.stdout.write(text));
      if (!several) {
        write(
          `platform simulator listening (seed ${s.seed}: ${s.courses.length} courses, ${s.users.length} users, ${s.results.length + s.undatedResults.length} results)\n` +
            `TRAINSYNC_API_URL=${sim.url}\nTRAINSYNC_API_KEY=${sim.apiKey}\n` +
            (options.webhookUrl === undefined ? '' : `webhooks to ${options.webhookUrl}, signed in ${sim.webhooks.settings.header}\nTRAINSYNC_WEBHOOK_SECRET=${sim.webhooks.settings.secret}\n`),
        );
      } else {
        const lines = sim.organisations.map((o) => {
          const st = o.state;
          const hooks = o.webhooks.settings.url === undefined ? '' : `; webhooks to ${o.webhooks.settings.url}`;
          const secretLine = o.webhooks.settings.url === undefined ? '' : `${secretVariable(o.name, 'WEBHOOK_SECRET')}=${o.webhooks.settings.secret}\n`;
          return `${o.name}  ${o.id}  seed ${st.seed}: ${st.courses.length} courses, ${st.users.length} users, ${st.results.length + st.undatedResults.length} results${hooks}\n${secretVariable(o.name, 'API_KEY')}=${o.apiKey}\n${secretLine}`;
        });
        const overlap = sim.overlap;
        if (options.orgsFile !== undefined) await writeFile(options.orgsFile, orgsFileFor(sim));
        write(
          `platform simulator listening with ${sim.organisations.length} organisations, one key each\nAPI URL ${sim.url}\n${lines.join('')}` +
            (overlap === undefined
              ? ''
              : `shared course GUIDs: ${overlap.courseIds.join(', ')}\n` + (overlap.user === undefined ? '' : `user in ${sim.organisations[0]!.name} and ${sim.organisations[1]!.name}: ${overlap.user.email} (${overlap.user.id})\n`)) +
            (options.orgsFile === undefined ? '' : `TRAINSYNC_ORGS_FILE=${options.orgsFile}\n`),
        );
      }
      await (deps.stopped ?? untilSignal)();
      await sim.close();
    });
}

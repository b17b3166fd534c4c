import { fstatSync } from 'node:fs';
import { z } from 'zod';
import { faultsPatchSchema } from './faults.ts';
import { startSimulator, type SimulatorOptions } from './index.ts';
import { webhookSettingsPatchSchema } from './webhooks.ts';

/**
 * Runs a simulator in a process of its own, so a benchmark's or test's client does
 * not share its event loop: `node bin/run-ts.js src/simulator/child.ts '<options JSON>'`.
 * Prints one JSON line `{"url","port","apiKey","organisations":[{"id","name","apiKey","webhookSecret"}]}` once listening; stops on SIGTERM/SIGINT
 * or, when stdin is a pipe, when its parent closes it.
 */

const count = z.number().int().min(0);
const sizesSchema = z
  .object({
    courses: count,
    filters: count,
    answersPerFilter: count,
    users: count,
    groups: count,
    results: count,
    resultsFrom: z.string().regex(/^\d{4}-\d{2}-\d{2}$/),
    resultsTo: z.string().regex(/^\d{4}-\d{2}-\d{2}$/),
  })
  .partial()
  .strict();
/** The dataset options one organisation has. */
const datasetShape = {
  seed: count.optional(),
  sizes: sizesSchema.optional(),
  totalSeats: count.optional(),
  unlimitedPlan: z.boolean().optional(),
  usersEndpoint: z.boolean().optional(),
  groupsEndpoint: z.boolean().optional(),
  dateBounds: z.enum(['exclusive-instant', 'inclusive-date', 'date-only']).optional(),
};
const webhooksSchema = webhookSettingsPatchSchema.transform((w) => ({ ...w, url: w.url ?? undefined }));
const organisationSchema = z
  .object({
    ...datasetShape,
    apiKey: z.string().min(1),
    id: z.guid().optional(),
    name: z.string().min(1).optional(),
    emailDomain: z.string().regex(/^@[^@\s]+\.[^@\s]+$/).optional(),
    webhooks: webhooksSchema.optional(),
  })
  .strict();
const optionsSchema = z
  .object({
    ...datasetShape,
    host: z.string().optional(),
    port: count.max(65_535).optional(),
    apiKey: z.string().min(1).optional(),
    faults: faultsPatchSchema.optional(),
    webhooks: webhooksSchema.optional(),
    organisations: z.array(organisationSchema).min(1).optional(),
    overlap: z.union([z.boolean(), z.object({ courses: count.optional(), sharedUser: z.boolean().optional() }).strict()]).optional(),
  })
  .strict();

const options: SimulatorOptions = optionsSchema.parse(JSON.parse(process.argv[2] ?? '{}'));
const sim = await startSimulator(options);
// The keys are the ones the parent gave (or the demo key): test keys, handed back so it can pair them with the GUIDs.
const organisations = sim.organisations.map((o) => ({ id: o.id, name: o.name, apiKey: o.apiKey, webhookSecret: o.webhooks.settings.secret }));
process.stdout.write(`${JSON.stringify({ url: sim.url, port: sim.port, apiKey: sim.apiKey, organisations })}\n`);

let stopping = false;
const stop = (): void => {
  if (stopping) return;
  stopping = true;
  void sim.close().then(() => process.exit(0));
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
// A parent that pipes stdin stops us by closing it, even if it dies without a signal.
const stdin = fstatSync(0);
// Node's spawn gives a socket pair, a shell a FIFO; /dev/null or a terminal must not stop us.
if (stdin.isFIFO() || stdin.isSocket()) {
  process.stdin.on('end', stop);
  process.stdin.resume();
}

import { fstatSync } from 'node:fs';
import { z } from 'zod';
import { faultsPatchSchema } from './faults.ts';
import { startSimulator, type SimulatorOptions } from './index.ts';

/**
 * Runs a simulator in a process of its own, so a benchmark's or test's client does
 * not share its event loop: `node bin/run-ts.js src/simulator/child.ts '<options JSON>'`.
 * Prints one JSON line `{"url","port","apiKey"}` once listening; stops on SIGTERM/SIGINT
 * or, when stdin is a pipe, when its parent closes it.
 */

const count = z.number().int().min(0);
const optionsSchema = z
  .object({
    host: z.string().optional(),
    port: count.max(65_535).optional(),
    seed: count.optional(),
    apiKey: z.string().min(1).optional(),
    sizes: z
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
      .strict()
      .optional(),
    faults: faultsPatchSchema.optional(),
    totalSeats: count.optional(),
    unlimitedPlan: z.boolean().optional(),
    usersEndpoint: z.boolean().optional(),
    dateBounds: z.enum(['exclusive-instant', 'inclusive-date']).optional(),
  })
  .strict();

const options: SimulatorOptions = optionsSchema.parse(JSON.parse(process.argv[2] ?? '{}'));
const sim = await startSimulator(options);
process.stdout.write(`${JSON.stringify({ url: sim.url, port: sim.port, apiKey: sim.apiKey })}\n`);

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

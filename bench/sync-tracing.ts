/**
 * What traces cost a sync: `sync results` (a first load of a fresh warehouse, then a
 * reload with part of the data changed) with traces off, as by default, beside the same
 * loads with OTEL_TRACES_EXPORTER=otlp sending every span to an OTLP/HTTP receiver in this
 * process, in alternating pairs (off first, then on first, …) so drift of a shared machine
 * falls on both alike. Each load is a process of its own (bench/sync-scenario.ts): a
 * process with traces off never loads the SDK, so off and on cannot share one.
 * CPU per result is the sync process's own (user + system); the receiver's is not in it.
 *
 *   node bin/run-ts.js bench/sync-tracing.ts '{"results":50000,"pairs":3}'
 *
 * Prints one JSON line with the figures.
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { z } from 'zod';

const args = z
  .object({
    results: z.number().int().positive().default(50_000),
    pairs: z.number().int().positive().default(3),
    changeFraction: z.number().min(0).max(1).default(0.1),
    protocol: z.enum(['http/protobuf', 'http/json']).default('http/protobuf'),
  })
  .parse(JSON.parse(process.argv[2] ?? '{}'));

/** What the receiver took: export requests and bytes (and spans, when they come as JSON). */
const received = { requests: 0, bytes: 0, spans: 0 };
const receiver = createServer((request, response) => {
  let bytes = 0;
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => {
    bytes += chunk.length;
    if (args.protocol === 'http/json') chunks.push(chunk);
  });
  request.on('end', () => {
    received.requests += 1;
    received.bytes += bytes;
    if (args.protocol === 'http/json') {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { resourceSpans?: { scopeSpans?: { spans?: unknown[] }[] }[] };
      for (const r of body.resourceSpans ?? []) for (const s of r.scopeSpans ?? []) received.spans += s.spans?.length ?? 0;
    }
    response.writeHead(200, { 'content-type': args.protocol === 'http/json' ? 'application/json' : 'application/x-protobuf' }).end(args.protocol === 'http/json' ? '{}' : '');
  });
});
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/v1/traces`;

const scenarioSchema = z.object({
  tracing: z.boolean(),
  openTelemetryRegistered: z.boolean(),
  firstLoadCpuMicrosPerResult: z.number(),
  reloadCpuMicrosPerResult: z.number(),
  firstLoadSeconds: z.number(),
  reloadSeconds: z.number(),
  peakRssMb: z.number(),
});
type Scenario = z.infer<typeof scenarioSchema>;

function scenario(tracing: boolean): Promise<Scenario> {
  const input = { results: args.results, changeFraction: args.changeFraction, ...(tracing ? { tracing: { url, protocol: args.protocol } } : {}) };
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['bin/run-ts.js', 'bench/sync-scenario.ts', JSON.stringify(input)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
    child.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`sync-scenario exited with ${code}`));
      const line = out.trim().split('\n').reverse().find((l) => l.startsWith('{'));
      resolve(scenarioSchema.parse(JSON.parse(line ?? '{}')));
    });
  });
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};
const round = (value: number, digits = 1): number => Number(value.toFixed(digits));

const loadBefore = os.loadavg();
const runs: Array<Scenario & { pair: number }> = [];
const exported: number[] = [];
try {
  for (let pair = 1; pair <= args.pairs; pair += 1) {
    const order = pair % 2 === 1 ? [false, true] : [true, false];
    for (const tracing of order) {
      const before = { ...received };
      const run = await scenario(tracing);
      if (run.tracing !== tracing) throw new Error(`asked for traces ${tracing ? 'on' : 'off'}, the run had them ${run.tracing ? 'on' : 'off'}`);
      if (!tracing && run.openTelemetryRegistered) throw new Error('traces off, yet OpenTelemetry registered itself');
      if (tracing) exported.push(received.spans - before.spans);
      runs.push({ ...run, pair });
      process.stderr.write(
        `pair ${pair} traces ${tracing ? 'on ' : 'off'}: first load ${run.firstLoadCpuMicrosPerResult} µs/result CPU (${run.firstLoadSeconds} s), reload ${run.reloadCpuMicrosPerResult} µs/result (${run.reloadSeconds} s), load average ${os.loadavg()[0]!.toFixed(1)}\n`,
      );
    }
  }
} finally {
  receiver.close();
}

const of = (tracing: boolean): Scenario[] => runs.filter((r) => r.tracing === tracing);
const summary = (tracing: boolean): Record<string, number> => ({
  firstLoadCpuMicrosPerResult: round(median(of(tracing).map((r) => r.firstLoadCpuMicrosPerResult))),
  reloadCpuMicrosPerResult: round(median(of(tracing).map((r) => r.reloadCpuMicrosPerResult))),
  firstLoadSeconds: round(median(of(tracing).map((r) => r.firstLoadSeconds)), 2),
  peakRssMb: median(of(tracing).map((r) => r.peakRssMb)),
});
// Per pair: CPU per result with traces on minus off; the cost is the median of those differences.
const differences = (key: 'firstLoadCpuMicrosPerResult' | 'reloadCpuMicrosPerResult'): number[] =>
  Array.from({ length: args.pairs }, (_, i) => runs.find((r) => r.pair === i + 1 && r.tracing)![key] - runs.find((r) => r.pair === i + 1 && !r.tracing)![key]);
const off = summary(false);
const on = summary(true);
process.stdout.write(
  `${JSON.stringify({
    results: args.results,
    pairs: args.pairs,
    protocol: args.protocol,
    off,
    on,
    firstLoadCostMicrosPerResult: round(median(differences('firstLoadCpuMicrosPerResult'))),
    reloadCostMicrosPerResult: round(median(differences('reloadCpuMicrosPerResult'))),
    firstLoadDifferences: differences('firstLoadCpuMicrosPerResult').map((d) => round(d)),
    reloadDifferences: differences('reloadCpuMicrosPerResult').map((d) => round(d)),
    exportRequests: received.requests,
    exportedKilobytes: Math.round(received.bytes / 1024),
    ...(args.protocol === 'http/json' ? { spansPerRun: median(exported) } : {}),
    loadAverage: { before: loadBefore.map((l) => round(l)), after: os.loadavg().map((l) => round(l)) },
    cores: os.cpus().length,
  })}\n`,
);

import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

/**
 * How many 50-result pages a second the simulator serves, with 200,000 results,
 * from a child process (so the client's CPU does not share its event loop), to a
 * keep-alive http.Agent client running CONCURRENCY requests at a time.
 * Run: node bin/run-ts.js bench/simulator-pages.ts
 */

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export interface SimulatorPagesFigures {
  pagesPerSecond: number;
  pages: number;
  seconds: number;
  concurrency: number;
  results: number;
  bytesPerPage: number;
  errors: number;
  startupMs: number;
}

interface ChildInfo {
  url: string;
  apiKey: string;
}

async function startChild(results: number): Promise<{ child: ChildProcess; info: ChildInfo }> {
  const child = spawn(process.execPath, [path.join(ROOT, 'bin/run-ts.js'), path.join(ROOT, 'src/simulator/child.ts'), JSON.stringify({ sizes: { results } })], {
    cwd: ROOT,
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout! });
  const info = await new Promise<ChildInfo>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`simulator child exited with ${code}`)));
    lines.once('line', (line) => resolve(JSON.parse(line) as ChildInfo));
  });
  return { child, info };
}

function get(agent: http.Agent, url: URL, headers: Record<string, string>): Promise<{ status: number; bytes: number }> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent, headers }, (res) => {
      let bytes = 0;
      res.on('data', (c: Buffer) => {
        bytes += c.length;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes }));
      res.on('error', reject);
    });
    req.on('error', reject);
  });
}

export async function benchSimulatorPages(options: { seconds?: number; concurrency?: number; results?: number } = {}): Promise<SimulatorPagesFigures> {
  const seconds = options.seconds ?? 3;
  const concurrency = options.concurrency ?? 24;
  const results = options.results ?? 200_000;
  const t0 = performance.now();
  const { child, info } = await startChild(results);
  const startupMs = performance.now() - t0;
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const headers = { authorization: `Bearer ${info.apiKey}` };
  const totalPages = Math.ceil(results / 50);
  let pages = 0;
  let bytes = 0;
  let errors = 0;
  try {
    // Warm up: JIT and the per-result JSON cache, as a long-running server would be.
    for (let p = 1; p <= 50; p++) await get(agent, new URL(`${info.url}/api/v2/results?startDate=2024-01-01&endDate=2025-01-01&page=${p}`), headers);
    const start = performance.now();
    const deadline = start + seconds * 1000;
    let nextPage = 0;
    const loop = async (): Promise<void> => {
      while (performance.now() < deadline) {
        const page = (nextPage++ % totalPages) + 1;
        const r = await get(agent, new URL(`${info.url}/api/v2/results?startDate=2024-01-01&endDate=2025-01-01&page=${page}`), headers);
        if (r.status === 200) {
          pages++;
          bytes += r.bytes;
        } else errors++;
      }
    };
    await Promise.all(Array.from({ length: concurrency }, loop));
    const elapsed = (performance.now() - start) / 1000;
    return {
      pagesPerSecond: Math.round(pages / elapsed),
      pages,
      seconds: Number(elapsed.toFixed(2)),
      concurrency,
      results,
      bytesPerPage: pages === 0 ? 0 : Math.round(bytes / pages),
      errors,
      startupMs: Math.round(startupMs),
    };
  } finally {
    agent.destroy();
    child.kill('SIGTERM');
  }
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const figures = await benchSimulatorPages();
  process.stdout.write(`simulator results pages: ${figures.pagesPerSecond} pages/s (${figures.pages} pages of ~${figures.bytesPerPage} bytes in ${figures.seconds} s, ${figures.concurrency} concurrent, ${figures.results} results, ${figures.errors} errors, child start ${figures.startupMs} ms)\n`);
}

import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { createLogger } from '../src/log.ts';
import { createPlatformClient } from '../src/platform/client.ts';
const child = spawn(process.execPath, ['bin/run-ts.js', 'src/simulator/child.ts', JSON.stringify({ sizes: { results: 60000 } })], { stdio: ['pipe', 'pipe', 'inherit'] });
const info = await new Promise<{ url: string; apiKey: string }>((r) => createInterface({ input: child.stdout! }).once('line', (l) => r(JSON.parse(l))));
const client = createPlatformClient({ apiUrl: info.url, apiKey: info.apiKey, log: createLogger('warn'), redisUrl: 'redis://127.0.0.1:6379', keyPrefix: `tmp-${Math.random()}`, requestsPerSecond: 10000 });
for (let round = 0; round < 3; round++) {
  const c0 = process.cpuUsage(); const t0 = performance.now(); let n = 0;
  for await (const page of client.listResults({}, { prefetch: 4 })) n += page.records.length;
  const c = process.cpuUsage(c0);
  console.log(`${n} results: ${((c.user + c.system) / n).toFixed(1)} µs CPU/result (${(c.system / n).toFixed(1)} sys), ${(n / (performance.now() - t0) * 1000).toFixed(0)}/s`);
}
await client.close(); child.kill();

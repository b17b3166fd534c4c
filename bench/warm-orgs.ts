import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

/**
 * Every results page of every key once, `concurrency` at a time, before the timed load (the
 * simulator serialises a result on its first serve and keeps the text), in a process of its
 * own. The simulator stands in for a platform whose CPU is not on this machine: warm, it takes
 * about a third of the CPU it takes cold (docs/benchmarks.md, "The read side of a first load"),
 * which on two shared cores is wall time the workers would otherwise lose to it.
 * Call it with the simulator's latency at 0 (its faults), and set the latency back after.
 */
export async function warmOrgs(url: string, keys: ReadonlyArray<{ apiKey: string; pages: number }>, concurrency = 32): Promise<void> {
  const dir = await mkdtemp(path.join(tmpdir(), 'trainsync-warm-'));
  const file = path.join(dir, 'keys.json');
  await writeFile(file, JSON.stringify(keys));
  const script = `
    const { readFileSync } = await import('node:fs');
    const [url, file, concurrency] = process.argv.slice(1);
    const work = JSON.parse(readFileSync(file, 'utf8')).flatMap((k) => Array.from({ length: k.pages }, (_, i) => [k.apiKey, i + 1]));
    let next = 0;
    const reader = async () => {
      for (let i = next++; i < work.length; i = next++) {
        const [key, page] = work[i];
        const response = await fetch(url + '/api/v2/results?page=' + page, { headers: { authorization: 'Bearer ' + key } });
        if (!response.ok) throw new Error('page ' + page + ': HTTP ' + response.status);
        await response.arrayBuffer();
      }
    };
    await Promise.all(Array.from({ length: Number(concurrency) }, reader));`;
  try {
    await new Promise<void>((resolve, reject) => {
      const child = spawn(process.execPath, ['--input-type=module', '-e', script, url, file, String(concurrency)], { stdio: ['ignore', 'ignore', 'inherit'] });
      child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`warming the simulator exited with ${code}`))));
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

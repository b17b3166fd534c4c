import { spawn } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import type { SimulatorOptions } from '../src/simulator/index.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/**
 * The simulator in a process of its own, so its CPU is not counted as ours; it prints
 * its URL and key as one JSON line and stops when its stdin closes.
 */
export async function startSimulatorChild(
  options: SimulatorOptions,
): Promise<{ url: string; apiKey: string; organisations: Array<{ id: string; name: string; apiKey: string }>; stop(): void }> {
  const child = spawn(process.execPath, [path.join(ROOT, 'bin/run-ts.js'), path.join(ROOT, 'src/simulator/child.ts'), JSON.stringify(options)], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout! });
  const line = await new Promise<string>((resolve, reject) => {
    lines.once('line', resolve);
    child.once('exit', (code) => reject(new Error(`simulator exited with ${code}`)));
  });
  const info = z
    .object({ url: z.string(), apiKey: z.string(), organisations: z.array(z.object({ id: z.string(), name: z.string(), apiKey: z.string() })).default([]) })
    .parse(JSON.parse(line));
  return {
    ...info,
    stop: () => {
      // Closing its stdin stops the child; our ends of the pipes must go too, or they keep this process alive.
      lines.close();
      child.stdin?.end();
      child.stdout?.destroy();
      child.kill('SIGTERM');
    },
  };
}

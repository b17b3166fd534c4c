import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** `trainsync worker --no-schedules` in a process of its own, with only `env` (and PATH); the tail of its log kept for errors. */
export function startWorkerChild(env: Record<string, string>): { child: ChildProcess; output: () => string } {
  const child = spawn(process.execPath, [...(env.PROF_DIR ? ['--cpu-prof', `--cpu-prof-dir=${env.PROF_DIR}`] : []), path.join(ROOT, 'bin/trainsync.js'), 'worker', '--no-schedules'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let text = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    text = (text + chunk.toString('utf8')).slice(-20_000);
  });
  return { child, output: () => text };
}

import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { renderScreen } from './screen.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export interface TerminalRun {
  code: number | null;
  /** Everything the pseudo-terminal received, escape sequences included. */
  raw: string;
  /** The screen it leaves: one string per line. */
  screen: string[];
}

const quote = (arg: string): string => `'${arg.replace(/'/g, `'\\''`)}'`;

/**
 * Runs `trainsync <args>` on a pseudo-terminal of `columns` columns, through util-linux
 * `script` (no native module needed): stdout and stderr are a terminal, as for a person.
 */
export function runInTerminal(args: readonly string[], env: Record<string, string>, columns = 80): Promise<TerminalRun> {
  const command = `stty cols ${columns} rows 60; exec ${quote(process.execPath)} ${quote(path.join(ROOT, 'bin/trainsync.js'))} ${args.map(quote).join(' ')}`;
  return new Promise((resolve, reject) => {
    const child = spawn('script', ['-qfec', command, '/dev/null'], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', TERM: 'xterm-256color', COLUMNS: String(columns), ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let raw = '';
    // Decoded as a stream: a box character split across two chunks stays one character.
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => (raw += chunk));
    child.stderr.on('data', (chunk: string) => (raw += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, raw, screen: renderScreen(raw) }));
  });
}

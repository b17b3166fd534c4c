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
  const session = startInTerminal(args, env, columns);
  // Nothing typed: the terminal's input ends at once, as it did from /dev/null.
  session.endInput();
  return session.done;
}

export interface TerminalSession {
  /** What the pseudo-terminal received so far, escape sequences included. */
  raw(): string;
  /** Types Ctrl-C: the terminal's line discipline sends SIGINT to the command, as for a person. */
  ctrlC(): void;
  /** Ends the terminal's input (nothing more will be typed). */
  endInput(): void;
  done: Promise<TerminalRun>;
}

/** `runInTerminal`, started and left running: the test reads the screen as it goes and types Ctrl-C. */
export function startInTerminal(args: readonly string[], env: Record<string, string>, columns = 80): TerminalSession {
  const command = `stty cols ${columns} rows 60; exec ${quote(process.execPath)} ${quote(path.join(ROOT, 'bin/trainsync.js'))} ${args.map(quote).join(' ')}`;
  const child = spawn('script', ['-qfec', command, '/dev/null'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', TERM: 'xterm-256color', COLUMNS: String(columns), ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let raw = '';
  // Decoded as a stream: a box character split across two chunks stays one character.
  child.stdout.setEncoding('utf8');
  child.stderr.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => (raw += chunk));
  child.stderr.on('data', (chunk: string) => (raw += chunk));
  const done = new Promise<TerminalRun>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, raw, screen: renderScreen(raw) }));
  });
  return { raw: () => raw, ctrlC: () => void child.stdin.write('\x03'), endInput: () => void child.stdin.end(), done };
}

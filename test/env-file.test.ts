import { stderrSaid } from './helpers/cli.ts';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyEnvFile, EnvFileError, parseEnvFile } from '../src/lib/env-file.ts';
import { startSimulator, type RunningSimulator } from '../src/simulator/index.ts';

/**
 * A `.env` file in the working directory is read by every command before the configuration:
 * its variables join the environment, which wins; a line it cannot read stops the command
 * with one line naming the file and the line, exit 2, before anything is asked of anyone.
 */

const ROOT = path.resolve(import.meta.dirname, '..');
const ENTRY = path.join(ROOT, 'bin/trainsync.js');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `trainsync <args>` in `cwd`, with only PATH and `env` set (as a user in that folder would). */
function cliIn(cwd: string, args: readonly string[], env: Record<string, string> = {}): Promise<Run> {
  const child = spawn(process.execPath, [ENTRY, ...args], { cwd, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    // stderr as said: off a terminal the one line is a JSON record (its `msg` here).
    child.on('close', (code) => resolve({ code, stdout, stderr: stderrSaid(stderr) }));
  });
}

/** A folder of its own holding `.env` with `text`. */
function folderWith(text: string): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'trainsync-env-'));
  writeFileSync(path.join(dir, '.env'), text);
  folders.push(dir);
  return dir;
}

const folders: string[] = [];
let sim: RunningSimulator;

beforeAll(async () => {
  sim = await startSimulator({ seed: 7 });
});

afterAll(async () => {
  await sim?.close();
  for (const dir of folders) rmSync(dir, { recursive: true, force: true });
});

describe('a .env file, read by the CLI', () => {
  it('gives the CLI its settings (quotes, export, comments as other tools read them)', async () => {
    const dir = folderWith(`# trainsync against the simulator\nexport TRAINSYNC_API_URL=${sim.url}\r\nTRAINSYNC_API_KEY="${sim.apiKey}"   # the demo key\n\n`);
    const run = await cliIn(dir, ['seats', '--json']);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ applicable: true });
  });

  it('loses to the environment: a variable set in both is the environment\'s', async () => {
    const dir = folderWith(`TRAINSYNC_API_URL=${sim.url}\nTRAINSYNC_API_KEY=${sim.apiKey}\n`);
    const refused = await cliIn(dir, ['seats'], { TRAINSYNC_API_KEY: 'not-the-organisation-key' });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/refused|401|403/i);
    const wrongInFile = folderWith(`TRAINSYNC_API_URL=${sim.url}\nTRAINSYNC_API_KEY=not-the-organisation-key\n`);
    const accepted = await cliIn(wrongInFile, ['seats', '--json'], { TRAINSYNC_API_KEY: sim.apiKey });
    expect(accepted.code, accepted.stderr).toBe(0);
  });

  it('stops at a line it cannot read: one line naming the file and the line, exit 2, nothing asked of the platform', async () => {
    const dir = folderWith(`TRAINSYNC_API_URL=${sim.url}\nTRAINSYNC_API_KEY=${sim.apiKey}\nthis is not an assignment\n`);
    const before = sim.requests.length;
    for (const args of [['seats'], ['--help']]) {
      const run = await cliIn(dir, args);
      expect(run.code).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr).toBe(`trainsync: ${path.join(dir, '.env')} line 3: not NAME=value: "this is not an assignment"; lines read NAME=value (a comment starts with #)\n`);
    }
    expect(sim.requests.length).toBe(before);
  });

  it('refuses a TRAINSYNC_* variable trainsync does not read, naming the line and the variable meant', async () => {
    const dir = folderWith(`TRAINSYNC_API_URL=${sim.url}\nTRAINSYNC_API_KEY=${sim.apiKey}\nTRAINSYNC_REQUESTS_PER_SECONDS=5\nPOSTGRES_PASSWORD=for-docker-compose\n`);
    const run = await cliIn(dir, ['seats']);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr.trimEnd().split('\n')).toEqual([
      `trainsync: ${path.join(dir, '.env')} line 3: TRAINSYNC_REQUESTS_PER_SECONDS is not a trainsync variable: did you mean TRAINSYNC_REQUESTS_PER_SECOND?`,
    ]);
  });

  it('never crashes on hostile contents: it runs, or says one line naming the file, exit 2', async () => {
    const hostile = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 60 }),
      fc.array(fc.constantFrom('A=1', '"', "'", '`', 'X="open', '=', '==', '\u0000', '\uFEFF', '\r', 'export', '#', 'B=2 # c', 'TRAINSYNC_X=1', 'A=1', '1A=2', 'Ω=3'), { maxLength: 8 }).map((parts) => parts.join('\n')),
    );
    await fc.assert(
      fc.asyncProperty(hostile, async (text) => {
        const dir = folderWith(text);
        const run = await cliIn(dir, ['seats'], { TRAINSYNC_API_URL: sim.url, TRAINSYNC_API_KEY: sim.apiKey });
        expect(run.stderr).not.toMatch(/^\s+at /m);
        if (run.code === 0) return;
        expect(run.code, run.stderr).toBe(2);
        expect(run.stderr.trimEnd().split('\n'), run.stderr).toHaveLength(1);
        expect(run.stderr).toContain(path.join(dir, '.env'));
      }),
      { numRuns: 6 },
    );
  });
});

describe('reading a .env file (the parser)', () => {
  const name = fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_]{0,12}$/);
  /** Values written so that every .env reader reads them alike: no quotes, #, or edge spaces. */
  const value = fc.stringMatching(/^[A-Za-z0-9_./:@+-]{0,20}$/);

  it('reads what was written: each name its value and its line', () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.tuple(name, value, fc.constantFrom('plain', 'double', 'single', 'export')), { selector: ([n]) => n, maxLength: 8 }), (entries) => {
        const text = entries.map(([n, v, how]) => (how === 'double' ? `${n}="${v}"` : how === 'single' ? `${n}='${v}'` : how === 'export' ? `export ${n}=${v || 'x'}` : `${n}=${v}`)).join('\n');
        const read = parseEnvFile(text, '.env');
        expect(read.values).toEqual(Object.fromEntries(entries.map(([n, v, how]) => [n, how === 'export' ? v || 'x' : v])));
        for (const [i, [n]] of entries.entries()) expect(read.lines.get(n)).toBe(i + 1);
      }),
    );
  });

  it('either reads hostile text or throws one EnvFileError line naming the file and a line of it', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: 'binary', maxLength: 200 }), fc.array(fc.oneof(fc.constantFrom('A=1', 'A="x', '"', 'B=`y', 'z`', "C='a' b", '#c', 'export D=4', ' =5', 'E=6\r'), fc.string({ maxLength: 20 })), { maxLength: 10 }).map((l) => l.join('\n'))), (text) => {
        try {
          const read = parseEnvFile(text, '/srv/app/.env');
          for (const n of Object.keys(read.values)) expect(n).toMatch(/^[A-Za-z_][A-Za-z0-9_]*$/);
        } catch (error) {
          expect(error).toBeInstanceOf(EnvFileError);
          const message = (error as EnvFileError).message;
          expect(message).not.toMatch(/[\n\r]/);
          const line = /^\/srv\/app\/\.env line (\d+): /.exec(message);
          expect(line, message).not.toBeNull();
          expect(Number(line![1])).toBeLessThanOrEqual(text.split('\n').length);
        }
      }),
      { numRuns: 500 },
    );
  });

  it('names the line of each kind of mistake', () => {
    const cases: Array<[string, RegExp]> = [
      ['A=1\nA=2', /line 2: A is set again \(first on line 1\)/],
      ['A=1\nB="open\nC=3', /line 2: the " that opens B's value is never closed/],
      ['A="x" y', /line 1: text after the closing " of A/],
      ['A-B=1', /line 1: "A-B" cannot be a variable name/],
      ['A=1\u0000', /line 1: a control character \(U\+0000\)/],
      ['\n\nexport', /line 3: not NAME=value/],
      ['A=1\nexport B=', /line 2: Node's .env reader takes this line otherwise \(it reads a name "export B"\)/],
    ];
    for (const [text, expected] of cases) expect(() => parseEnvFile(text, '.env'), text).toThrow(expected);
    // A quoted value may run over lines; the next line after it is read as usual.
    expect(parseEnvFile('K="-----BEGIN\nabc\n-----END"\nN=1', '.env').values).toEqual({ K: '-----BEGIN\nabc\n-----END', N: '1' });
  });

  it('sets only what the environment does not hold, and reads nothing when there is no file', () => {
    const dir = folderWith('A=from-file\nB=from-file\n');
    const env: Record<string, string | undefined> = { A: 'from-env' };
    applyEnvFile(path.join(dir, '.env'), env);
    expect(env).toEqual({ A: 'from-env', B: 'from-file' });
    expect(applyEnvFile(path.join(dir, 'absent.env'), env)).toBeUndefined();
  });
});

import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Command } from 'commander';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allJobs } from '../jobs/index.ts';
import { buildProgram } from '../src/commands/program.ts';
import { createLogger } from '../src/runtime/log.ts';
import { runCli, stderrSaid } from './helpers/cli.ts';

/**
 * `trainsync completion bash|zsh`: the script is made from the program's own definition,
 * so every command and option is completed. Checked by asking bash itself to complete.
 */

/** The program as src/cli.ts builds it; completion never reads configuration. */
function program(): Command {
  return buildProgram({
    loadConfig: () => {
      throw new Error('completion must not read configuration');
    },
    createLogger: () => createLogger({ level: 'silent' }),
    jobs: allJobs,
    env: {},
  });
}

interface Expected {
  path: string[];
  subcommands: string[];
  longOptions: string[];
}

/** Every command of the program, walked here independently of src/commands/completion.ts. */
function everyCommand(command: Command, path: string[] = []): Expected[] {
  const subcommands = command.commands.map((sub) => sub.name());
  const longOptions = command.options.flatMap((option) => (option.long === undefined ? [] : [option.long]));
  return [{ path, subcommands, longOptions }, ...command.commands.flatMap((sub) => everyCommand(sub, [...path, sub.name()]))];
}

let dir: string;
let bashScript: string;
let zshScript: string;

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'trainsync-completion-'));
  const bash = await runCli(['completion', 'bash'], {});
  const zsh = await runCli(['completion', 'zsh'], {});
  expect(bash.code, bash.stderr).toBe(0);
  expect(zsh.code, zsh.stderr).toBe(0);
  bashScript = bash.stdout;
  zshScript = zsh.stdout;
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** What bash completes after `trainsync <words…>` (the last word is the one being typed). */
function bashCompletes(cases: readonly string[][]): string[][] {
  const script = path.join(dir, 'trainsync.bash');
  writeFileSync(script, bashScript);
  const calls = cases
    .map((words) => {
      const quoted = ['trainsync', ...words].map((w) => `'${w.replaceAll("'", "'\\''")}'`).join(' ');
      return `COMP_WORDS=(${quoted}); COMP_CWORD=${words.length}; _trainsync; printf '%s\\n' "\${COMPREPLY[*]}"`;
    })
    .join('\n');
  const run = spawnSync('bash', ['--norc', '--noprofile', '-c', `source ${script}\n${calls}`], { encoding: 'utf8' });
  expect(run.status, run.stderr).toBe(0);
  expect(run.stderr).toBe('');
  return run.stdout.split('\n').slice(0, cases.length).map((line) => (line === '' ? [] : line.split(' ')));
}

describe('trainsync completion bash', () => {
  it('is a script bash parses (bash -n), registered for the trainsync command', () => {
    const script = path.join(dir, 'parse.bash');
    writeFileSync(script, bashScript);
    const run = spawnSync('bash', ['-n', script], { encoding: 'utf8' });
    expect(run.status, run.stderr).toBe(0);
    expect(bashScript).toContain('complete -o default -F _trainsync trainsync');
  });

  it('completes every command, subcommand and option of the program, at every level', () => {
    const expected = everyCommand(program());
    expect(expected.length).toBeGreaterThan(20);
    const replies = bashCompletes(expected.map((e) => [...e.path, '']));
    for (const [i, e] of expected.entries()) {
      const reply = replies[i] ?? [];
      for (const word of [...e.subcommands, ...e.longOptions, '--help', '--verbose', '--org']) expect(reply, `trainsync ${e.path.join(' ')} <TAB>`).toContain(word);
    }
    // The top level lists the commands themselves, completion among them.
    expect(replies[0]).toEqual(expect.arrayContaining(['sync', 'provision', 'feed', 'doctor', 'demo', 'completion']));
  });

  it('completes a prefix, a nested command, and the shells after `completion`', () => {
    const [prefix, nested, options, shells, afterValue] = bashCompletes([['pro'], ['feed', ''], ['-v', 'provision', '--dry'], ['completion', ''], ['provision', '--profile', '']]);
    expect(prefix).toEqual(['provision']);
    expect(nested).toContain('check');
    expect(options).toEqual(['--dry-run']);
    expect(shells).toEqual(expect.arrayContaining(['bash', 'zsh']));
    // An option that takes a value leaves the reply empty: the shell completes file names.
    expect(afterValue).toEqual([]);
  });
});

describe('trainsync completion zsh', () => {
  it('is a #compdef script naming every command path', () => {
    expect(zshScript.startsWith('#compdef trainsync\n')).toBe(true);
    for (const e of everyCommand(program()).filter((c) => c.path.length > 0)) expect(zshScript).toContain(`'${e.path.join(' ')}'`);
    // zsh parses it, where zsh is installed (this kind of machine has bash only).
    if (existsSync('/usr/bin/zsh') || existsSync('/bin/zsh')) {
      const script = path.join(dir, '_trainsync');
      writeFileSync(script, zshScript);
      const run = spawnSync('zsh', ['-n', script], { encoding: 'utf8' });
      expect(run.status, run.stderr).toBe(0);
    }
  });
});

describe('trainsync completion: its arguments', () => {
  it('says what it does under --help', async () => {
    const run = await runCli(['completion', '--help'], {});
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('Usage: trainsync completion [options] <shell>');
    expect(run.stdout).toContain('source <(trainsync completion bash)');
  });

  it('prints a script for bash or zsh and refuses anything else with exit 2 and no stack trace', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.oneof(fc.constantFrom('bash', 'zsh', 'fish', 'BASH', ' bash', '--', '-x', ''), fc.string({ maxLength: 30 })), { maxLength: 3 }),
        async (args) => {
          const run = await runCli(['completion', ...args], {});
          const [shell] = args;
          const ok = args.length === 1 && (shell === 'bash' || shell === 'zsh');
          if (ok) {
            expect(run.code).toBe(0);
            expect(run.stdout).toContain('_trainsync()');
            return;
          }
          expect(run.code, JSON.stringify(args)).toBe(2);
          expect(run.stdout).toBe('');
          expect(stderrSaid(run.stderr)).toMatch(/^error: /);
          expect(run.stderr).not.toMatch(/^\s+at /m);
        },
      ),
      { numRuns: 8 },
    );
  });
});


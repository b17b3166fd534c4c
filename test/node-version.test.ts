import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import * as esbuild from 'esbuild';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { NODE_MAJOR_NEEDED, nodeVersionProblem } from '../bin/node-version.js';

/**
 * On a Node older than 22 every command (bin/trainsync.js: `trainsync …`, `npm run demo`,
 * `npm run trainsync`) says one line, which version it found, which it needs and how to get
 * it, and exits 2, before anything that needs Node 22 loads.
 */

const ROOT = path.resolve(import.meta.dirname, '..');
const ENTRY = path.join(ROOT, 'bin/trainsync.js');
/** Debian's own node, 20 on this kind of machine (the project's 22 comes first on PATH). */
const SYSTEM_NODE = '/usr/bin/node';

function majorOf(version: string): number {
  return Number(version.replace(/^v/, '').split('.')[0]);
}

function expectOneLine(line: string | undefined): asserts line is string {
  expect(line).toBeTypeOf('string');
  expect(line).not.toMatch(/[\r\n]/);
  expect(line).toContain(`Node ${NODE_MAJOR_NEEDED} or later`);
  expect(line).toContain(`nvm install ${NODE_MAJOR_NEEDED}`);
}

describe('the Node version check (a pure function of the version string)', () => {
  it('needs 22, as package.json engines says', () => {
    const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } };
    expect(pkg.engines.node).toBe(`>=${NODE_MAJOR_NEEDED}`);
  });

  it('lets 22 and later through, and names any older version in one line', () => {
    fc.assert(
      fc.property(fc.nat({ max: 40 }), fc.nat({ max: 99 }), fc.nat({ max: 99 }), fc.boolean(), (major, minor, patch, v) => {
        const version = `${v ? 'v' : ''}${major}.${minor}.${patch}`;
        const problem = nodeVersionProblem(version);
        if (major >= NODE_MAJOR_NEEDED) {
          expect(problem).toBeUndefined();
        } else {
          expectOneLine(problem);
          expect(problem).toContain(`this is Node ${major}.${minor}.${patch}:`);
        }
      }),
    );
    expect(nodeVersionProblem('22.0.0')).toBeUndefined();
    expect(nodeVersionProblem('21.7.3')).toContain('this is Node 21.7.3:');
  });

  it('never throws on a hostile version string: a refusal in one line, never a pass', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (text) => {
        fc.pre(!/^\s*v?\d/.test(text));
        expectOneLine(nodeVersionProblem(text));
      }),
    );
  });
});

describe('bin/trainsync.js on an older Node', () => {
  it('parses on every Node that runs ES modules (12.20 on): nothing newer to lower', () => {
    for (const file of ['bin/trainsync.js', 'bin/node-version.js']) {
      const source = readFileSync(path.join(ROOT, file), 'utf8');
      const asIs = esbuild.transformSync(source, { loader: 'js', format: 'esm', target: 'esnext' }).code;
      // esbuild rewrites (or refuses) any syntax Node 12.20 lacks: `?.`, `??`, top-level await…
      expect(esbuild.transformSync(source, { loader: 'js', format: 'esm', target: 'node12.20' }).code, file).toBe(asIs);
    }
  });

  it('says one line and exits 2 under Debian\'s Node 20, or runs under Node 22', () => {
    const system = existsSync(SYSTEM_NODE) ? spawnSync(SYSTEM_NODE, ['--version'], { encoding: 'utf8' }).stdout.trim() : undefined;
    // The node to try: the system's when it is older (this machine), else the one running the tests.
    const node = system !== undefined && majorOf(system) < NODE_MAJOR_NEEDED ? SYSTEM_NODE : process.execPath;
    const version = node === SYSTEM_NODE ? system! : process.version;
    for (const args of [['--help'], ['demo'], ['sync', 'all']]) {
      const run = spawnSync(node, [ENTRY, ...args], { cwd: ROOT, encoding: 'utf8', env: { PATH: process.env.PATH ?? '' }, timeout: 60_000 });
      if (majorOf(version) < NODE_MAJOR_NEEDED) {
        expect(run.status, args.join(' ')).toBe(2);
        expect(run.stdout).toBe('');
        expect(run.stderr).toBe(`${nodeVersionProblem(version)}\n`);
        expect(run.stderr).toContain(`this is Node ${version.replace(/^v/, '')}:`);
      } else if (args[0] === '--help') {
        expect(run.status).toBe(0);
        expect(run.stdout).toContain('Usage: trainsync');
      }
      if (majorOf(version) >= NODE_MAJOR_NEEDED) break;
    }
  });
});

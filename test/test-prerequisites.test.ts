import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * `npm test`'s pretest (bin/test-prerequisites.sh) on a machine that lacks a program the
 * suite runs and cannot install it (here: no apt-get on PATH): one line naming each missing
 * program and the command that installs it, and a failure, before any test runs.
 */

const ROOT = path.resolve(import.meta.dirname, '..');
const bin = mkdtempSync(path.join(os.tmpdir(), 'trainsync-prereq-'));
afterAll(() => rmSync(bin, { recursive: true, force: true }));

describe('bin/test-prerequisites.sh', () => {
  it('names what is missing and the one command that installs it, in one line, and fails', () => {
    // A PATH with the tools the script itself uses and this Node, but no apt-get and no promtool.
    for (const tool of ['id', 'dirname']) symlinkSync(`/usr/bin/${tool}`, path.join(bin, tool));
    const run = spawnSync('/bin/sh', [path.join(ROOT, 'bin/test-prerequisites.sh')], {
      cwd: os.tmpdir(),
      encoding: 'utf8',
      env: { PATH: `${path.dirname(process.execPath)}:${bin}`, CHROMIUM_PATH: '/nonexistent/chromium', PGBOUNCER_PATH: process.execPath },
    });
    expect(run.status).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toBe(
      "npm test needs /nonexistent/chromium, promtool, not found: install Debian's chromium prometheus with `sudo apt-get update && sudo apt-get install -y chromium prometheus` (bin/test-prerequisites.sh says why each)\n",
    );
  });
});

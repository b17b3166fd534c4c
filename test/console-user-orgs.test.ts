import fc from 'fast-check';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.ts';
import { actingOrg, outsideOrg, scopeOf } from '../src/console/scope.ts';
import { hashConsolePassword, parseConsoleUsers } from '../src/settings/console-users.ts';
import { runCli, stderrSaid } from './helpers/cli.ts';

/**
 * Console users limited to some organisations (`name:role:hash:acme+globex`): the entry's
 * form and its errors, the check of its slugs against the configured organisations (a
 * configuration error, exit 2), and the rule that decides what such a user sees and may act
 * in, as properties over any organisations, any entry and any choice or form field.
 */

const COST = { N: 2 ** 12, r: 8, p: 1 };
let hash: string;
let dir: string;
let orgsFile: string;

beforeAll(async () => {
  hash = await hashConsolePassword('pw-for-org-users', COST);
  dir = mkdtempSync(path.join(tmpdir(), 'trainsync-console-user-orgs-'));
  orgsFile = path.join(dir, 'orgs.json');
  writeFileSync(
    orgsFile,
    JSON.stringify({
      organisations: ['acme', 'globex', 'initech'].map((slug) => ({ slug, name: slug.toUpperCase(), apiUrl: 'https://t.example', apiKey: { env: 'ORG_KEY' } })),
    }),
  );
});
afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return [...(error as ConfigError).problems];
  }
  throw new Error('expected a ConfigError');
}

describe('TRAINSYNC_CONSOLE_USERS with organisations', () => {
  it('takes a fourth field of slugs joined by "+"; an entry without it sees every organisation', () => {
    expect(parseConsoleUsers(`ana:operator:${hash}, lena:viewer:${hash}:acme, max:operator:${hash}:acme+globex`)).toEqual([
      { name: 'ana', role: 'operator', hash },
      { name: 'lena', role: 'viewer', hash, orgs: ['acme'] },
      { name: 'max', role: 'operator', hash, orgs: ['acme', 'globex'] },
    ]);
  });

  it('refuses an empty field, a slug that is not one, a slug twice, or a fifth field', () => {
    expect(parseConsoleUsers(`lena:viewer:${hash}:`)).toMatch(/^entry 1 \(lena\): after the hash, organisation slugs joined by "\+", e\.g\. acme or acme\+globex \(leave the field off for every organisation\)$/);
    expect(parseConsoleUsers(`lena:viewer:${hash}:acme+`)).toMatch(/^entry 1 \(lena\): after the hash, organisation slugs/);
    expect(parseConsoleUsers(`ana:operator:${hash},lena:viewer:${hash}:Acme`)).toMatch(/^entry 2 \(lena\): organisation "Acme" is not a slug; after the hash/);
    expect(parseConsoleUsers(`lena:viewer:${hash}:acme+acme`)).toBe('entry 1 (lena): organisation acme is named twice');
    expect(parseConsoleUsers(`lena:viewer:${hash}:acme:globex`)).toMatch(/^entry 1: name:role:hash or name:role:hash:org1\+org2/);
  });

  it('loads with configured slugs; an unknown slug is a configuration error naming the entry, the slug and the fix', () => {
    const base = { TRAINSYNC_ORGS_FILE: orgsFile, ORG_KEY: 'k' };
    const config = loadConfig({ ...base, TRAINSYNC_CONSOLE_USERS: `ana:operator:${hash},lena:viewer:${hash}:globex+acme` });
    expect(config.TRAINSYNC_CONSOLE_USERS?.[1]?.orgs).toEqual(['globex', 'acme']);
    const problems = problemsOf({ ...base, TRAINSYNC_CONSOLE_USERS: `ana:operator:${hash},lena:viewer:${hash}:acme+umbrella+hooli` });
    expect(problems).toEqual([
      'TRAINSYNC_CONSOLE_USERS: entry 2 (lena): organisation "umbrella" is not configured (configured: acme, globex, initech); name only configured slugs after the hash, e.g. lena:viewer:scrypt$…:acme, or leave that field off for every organisation',
      'TRAINSYNC_CONSOLE_USERS: entry 2 (lena): organisation "hooli" is not configured (configured: acme, globex, initech); name only configured slugs after the hash, e.g. lena:viewer:scrypt$…:acme, or leave that field off for every organisation',
    ]);
    // The hash is not repeated in the message (only its form, scrypt$…).
    expect(problems.join('\n')).not.toContain(hash);
    // Without an orgs file the one organisation is `default`.
    expect(loadConfig({ TRAINSYNC_CONSOLE_USERS: `lena:viewer:${hash}:default` }).TRAINSYNC_CONSOLE_USERS?.[0]?.orgs).toEqual(['default']);
    expect(problemsOf({ TRAINSYNC_CONSOLE_USERS: `lena:viewer:${hash}:acme` })[0]).toMatch(/entry 1 \(lena\): organisation "acme" is not configured \(configured: default\)/);
  });

  it('the console refuses to start on an unknown slug: exit 2, the problem on stderr, nothing served', async () => {
    const run = await runCli(['console'], { TRAINSYNC_ORGS_FILE: orgsFile, ORG_KEY: 'k', TRAINSYNC_CONSOLE_USERS: `lena:viewer:${hash}:acmee`, TRAINSYNC_CONSOLE_PORT: '0' });
    expect(run.code, run.stderr).toBe(2);
    expect(run.stdout + stderrSaid(run.stderr)).toContain('TRAINSYNC_CONSOLE_USERS: entry 1 (lena): organisation "acmee" is not configured (configured: acme, globex, initech)');
    expect(run.stdout + run.stderr).not.toContain('serving the console');
  });
});

/** Any few organisations (unique slugs, file order), an entry's subset or none, and a slug a form or choice may name. */
const setting = fc
  .uniqueArray(fc.constantFrom('a', 'b', 'c', 'd', 'e'), { minLength: 1, maxLength: 5 })
  .chain((slugs) =>
    fc.record({
      orgs: fc.constant(slugs.map((slug) => ({ slug, name: slug.toUpperCase() }))),
      allowed: fc.option(fc.subarray(slugs, { minLength: 1 }), { nil: undefined }),
      chosen: fc.option(fc.constantFrom('a', 'b', 'c', 'd', 'e', 'x'), { nil: null }),
      given: fc.option(fc.constantFrom('a', 'b', 'c', 'd', 'e', 'x', ''), { nil: undefined }),
    }),
  );

describe('what a console user sees and acts in (properties)', () => {
  it('a page reads only organisations of the entry, at least one; limited exactly when a configured one is left out', () => {
    fc.assert(
      fc.property(setting, ({ orgs, allowed, chosen }) => {
        const scope = scopeOf({ orgs }, chosen, allowed);
        const may: readonly string[] = allowed ?? orgs.map((o) => o.slug);
        expect(scope.orgs.map((o) => o.slug).every((s) => may.includes(s))).toBe(true);
        expect(scope.slugs.length).toBeGreaterThan(0);
        expect(scope.slugs.every((s) => may.includes(s))).toBe(true);
        expect(scope.limited).toBe(orgs.some((o) => !may.includes(o.slug)));
        // The selector offers exactly the user's organisations, in the file's order.
        expect(scope.orgs.map((o) => o.slug)).toEqual(orgs.map((o) => o.slug).filter((s) => may.includes(s)));
        if (scope.org !== undefined) expect(scope.slugs).toEqual([scope.org]);
      }),
      { numRuns: 2_000 },
    );
  });

  it('a change acts only in an organisation of the entry; a form naming another is refused for a limited user, never redirected', () => {
    fc.assert(
      fc.property(setting, ({ orgs, allowed, chosen, given }) => {
        const scope = scopeOf({ orgs }, chosen, allowed);
        const may: readonly string[] = allowed ?? orgs.map((o) => o.slug);
        const outside = outsideOrg(scope, given);
        expect(outside).toBe(scope.limited && given !== undefined && given !== '' && !may.includes(given));
        if (outside) return;
        const acting = actingOrg(scope, given);
        if (acting !== undefined) expect(may).toContain(acting);
        // A form naming one of the user's organisations acts there.
        if (given !== undefined && may.includes(given)) expect(acting).toBe(given);
      }),
      { numRuns: 2_000 },
    );
  });

  it('a user of every organisation keeps today\'s view: the same scope as no entry field at all', () => {
    fc.assert(
      fc.property(setting, ({ orgs, chosen }) => {
        const all = orgs.map((o) => o.slug);
        expect(scopeOf({ orgs }, chosen, all)).toEqual(scopeOf({ orgs }, chosen));
        expect(scopeOf({ orgs }, chosen).limited).toBe(false);
      }),
      { numRuns: 500 },
    );
  });
});

import fc from 'fast-check';
import { InvalidArgumentError } from 'commander';
import { describe, expect, it } from 'vitest';
import { confirmCountOption, confirmWithoutForce } from '../src/commands/options/confirm-option.ts';
import { confirmationProblem, MAX_CONFIRM, parseTypedCount } from '../src/provisioning/pipeline/confirm.ts';
import { FORCE_ASK } from '../src/provisioning/pipeline/guards.ts';
import { runCli } from './helpers/cli.ts';
import { expectNoApplyingCommand } from './helpers/no-applying-command.ts';

/**
 * `--confirm N` is the typed count of a mass disable (`provision`, `reconcile --fix`, `held
 * --approve`, `scim held --release`): arbitrary and hostile values are a usage error (exit
 * 2, one line naming the option and what it takes), never a crash, never read as another
 * number, and never an apply.
 */

/** Values a person or a script might type that are not a whole count: signs, decimals, exponents, hex, words, control bytes, huge numbers. */
const hostile = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom('-1', '+8', '8.0', '8e0', '1e3', '0x10', '0b1', '0o7', 'Infinity', 'NaN', '8 9', '٨', '８', '99999999999', '1_000', '8;rm -rf /', '$(echo 8)', '8\u0000', ' ', ''),
  fc.integer({ min: MAX_CONFIRM + 1 }).map(String),
  fc.tuple(fc.nat({ max: 1000 }), fc.constantFrom('.5', 'e1', 'x', ' people', '%')).map(([n, tail]) => `${n}${tail}`),
);
const isCount = (value: string): boolean => /^\s*\d{1,10}\s*$/.test(value) && Number(value.trim()) <= MAX_CONFIRM;

describe('--confirm N, the typed count', () => {
  it('takes a whole count and nothing else; anything else throws commander\'s InvalidArgumentError (exit 2), never another error', () => {
    fc.assert(
      fc.property(fc.oneof(hostile, fc.nat({ max: MAX_CONFIRM }).map(String)), (value) => {
        if (isCount(value)) {
          expect(confirmCountOption(value)).toBe(Number(value.trim()));
        } else {
          expect(() => confirmCountOption(value)).toThrow(InvalidArgumentError);
          expect(parseTypedCount(value)).toBeUndefined();
        }
      }),
      { numRuns: 500 },
    );
  });

  it('a refusal quotes what was typed as data, short, and never prints a count after --confirm', () => {
    fc.assert(
      fc.property(hostile, fc.integer({ min: 1, max: 5000 }), (typed, disables) => {
        const problem = confirmationProblem({ what: 'the plan', verb: 'apply', disables }, typed, FORCE_ASK);
        if (typed.trim() !== '' && parseTypedCount(typed) === disables) return;
        expect(problem).toBeDefined();
        expect(problem!.length).toBeLessThan(400);
        expect(problem).not.toMatch(/[\u0000-\u0008\u000b-\u001f]/);
        expectNoApplyingCommand(problem!);
      }),
      { numRuns: 300 },
    );
  });

  it('goes with --force only', () => {
    expect(confirmWithoutForce({ confirm: 8 })).toMatch(/--confirm N goes with --force/);
    expect(confirmWithoutForce({ confirm: 8, force: true })).toBeUndefined();
    expect(confirmWithoutForce({ force: true })).toBeUndefined();
  });

  it('through the real CLI: a hostile value is exit 2 with one line naming --confirm, before anything connects, on every command that takes it', async () => {
    // No DATABASE_URL, Redis or platform that answers: an apply could not even start, and a parse that let the value through would fail otherwise.
    const env = { DATABASE_URL: 'postgres://nobody@127.0.0.1:9/none', TRAINSYNC_API_URL: 'http://127.0.0.1:9', TRAINSYNC_API_KEY: 'k' };
    const commands = [
      (v: string) => ['provision', 'examples/hr-feed.csv', '--force', '--confirm', v],
      (v: string) => ['reconcile', '--fix', '--force', '--confirm', v],
      (v: string) => ['held', '--approve', '1', '--confirm', v],
      (v: string) => ['scim', 'held', '--release', '1', '--confirm', v],
    ];
    const values = fc.sample(hostile.filter((v) => !isCount(v) && !v.includes('\u0000')), { numRuns: 2, seed: 7 });
    const runs = await Promise.all(
      commands.flatMap((command) => [...values, '-1', '8e0'].map(async (value) => ({ value, args: command(value), run: await runCli(command(value), env) }))),
    );
    for (const { args, run } of runs) {
      expect(run.code, `${args.join(' ')}: ${run.stderr}`).toBe(2);
      expect(run.stderr).toMatch(/--confirm <n>.*expected the number of people who will lose access, a whole number/s);
      expect(run.stderr).not.toMatch(/at .*\.js:\d+|TypeError|RangeError/);
      expectNoApplyingCommand(run.stderr + run.stdout);
    }
  }, 120_000);
});

import { InvalidArgumentError } from 'commander';
import { MAX_CONFIRM, parseTypedCount } from '../../provisioning/pipeline/confirm.ts';
import { FORCE_ASK, type Confirmation } from '../../provisioning/pipeline/guards.ts';

/**
 * `--confirm N`, the typed count of a mass disable (`provision`, `reconcile --fix`, `held
 * --approve`): a whole number of people and nothing else. Anything else (a sign, a decimal,
 * an exponent, hex, a word, a number past MAX_CONFIRM) is a usage error, exit 2, before
 * anything connects: never read as some other number.
 */
export function confirmCountOption(value: string): number {
  const n = parseTypedCount(value);
  if (n === undefined) throw new InvalidArgumentError(`expected the number of people who will lose access, a whole number from 0 to ${MAX_CONFIRM} (the plan shows it)`);
  return n;
}

/** `--force` and `--confirm N` as the pipeline takes them; --confirm without --force is refused by the caller. */
export function forceConfirmation(confirm: number | undefined): Confirmation | undefined {
  return confirm === undefined ? undefined : { typed: confirm, ask: FORCE_ASK };
}

/** The usage error of --confirm without --force (undefined: the two go together). */
export function confirmWithoutForce(options: { confirm?: number | undefined; force?: boolean | undefined }): string | undefined {
  if (options.confirm === undefined || options.force) return undefined;
  return '--confirm N goes with --force: it is the number of people a forced plan takes access from (without --force, a plan past the disable limit is held for approval)';
}

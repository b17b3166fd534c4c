import { expect } from 'vitest';

/**
 * A mass disable is applied only with its count typed by a person, so no message (CLI,
 * `held`, the console, logs, help) may print a command that would apply one as it stands:
 * a count after --confirm (`--confirm 8`, `--confirm=8`) anywhere in the text. `--confirm N`
 * with the letter, and the count said in prose, are what the messages print instead. (The
 * refusals no longer suggest `--force` alone or a raised `--max-disable` either: the unit
 * tests of their wording check that.)
 */
export const APPLYING_COMMAND = /--confirm(?:\s+|=)["']?\d/;

export function expectNoApplyingCommand(text: string): void {
  const found = APPLYING_COMMAND.exec(text);
  expect(found === null ? null : text.slice(Math.max(0, found.index - 80), found.index + 40), 'a message printed a command that would apply a mass disable').toBeNull();
}

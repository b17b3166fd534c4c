import { CommanderError, InvalidArgumentError } from 'commander';
import { ConfigError } from '../../config.ts';
import { InfrastructureError } from '../../lib/infra-errors.ts';
import { NotMigratedError } from '../../warehouse/migrator.ts';
import { AppRoleError } from '../../warehouse/app-role.ts';
import { OrgReaderError } from '../../warehouse/org-readers.ts';
import { isRefusedKeyMessage, isUnreachableMessage, PLATFORM_UNREACHABLE, PlatformError } from '../../platform/errors.ts';

/** The exit codes of every command (docs/reference.md, "Exit codes"). */
export const EXIT = { ok: 0, failed: 1, refused: 2, incomplete: 3, interrupted: 130 } as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** Shown under every command's --help. */
export const EXIT_CODE_HELP = `
Exit codes (the same for every command):
  0    ok
  1    rows rejected, actions failed, or a service (Postgres, Redis, the platform) failed
  2    refused: usage (unknown option or command, bad value, impossible date, a feed
       file that cannot be read) or configuration (a variable, a missing migration, an
       API key the platform refuses, an API URL where nothing answers, a worker whose
       settings differ); nothing was changed
  3    incomplete: some data could not be read to the end; the next run reads it
  130  interrupted (Ctrl-C)`;

/** A command line a person got wrong: exit 2, and the message says the fix. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/** A refusal before anything was changed (a conflict, a missing migration): exit 2. */
export class RefusedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RefusedError';
  }
}

/**
 * The platform refused the API key (401/403): the configuration's fault, like a bad
 * variable, so exit 2 from every command. A job's failure arrives as its message only.
 */
export function isRefusedKey(error: unknown): boolean {
  if (error instanceof PlatformError) return error.code === 'UNAUTHORIZED';
  return typeof error === 'string' && isRefusedKeyMessage(error);
}

/**
 * Nothing answers at the platform's URL and nothing ever did (refused, unknown host):
 * the URL setting's fault, exit 2 like a refused key. A job's failure arrives as its message only.
 */
export function isUnreachablePlatform(error: unknown): boolean {
  if (error instanceof PlatformError) return error.code === PLATFORM_UNREACHABLE;
  return typeof error === 'string' && isUnreachableMessage(error);
}

/** The exit code for an error that ended a command. */
export function exitCodeFor(error: unknown): ExitCode {
  if (error instanceof CommanderError) {
    // --help and --version end through here too, with code 0.
    return error.exitCode === 0 ? EXIT.ok : EXIT.refused;
  }
  if (error instanceof UsageError || error instanceof RefusedError || error instanceof ConfigError || error instanceof NotMigratedError || error instanceof InvalidArgumentError) return EXIT.refused;
  // Roles to fix: a reader role that would see every organisation, a login that cannot take trainsync_app.
  if (error instanceof OrgReaderError || error instanceof AppRoleError) return EXIT.refused;
  // A setting naming something that is not the service (REDIS_URL at an HTTP port) is configuration.
  if (error instanceof InfrastructureError && error.misconfigured) return EXIT.refused;
  if (isRefusedKey(error) || isUnreachablePlatform(error)) return EXIT.refused;
  return EXIT.failed;
}

let reason: string | undefined;

/**
 * Sets the exit code and the one line that says why (printed last by src/cli.ts, so
 * the reason for a non-zero exit is never scrolled away by the output before it).
 */
export function exitWith(code: ExitCode, why?: string): void {
  process.exitCode = code;
  reason = code === EXIT.ok ? undefined : why;
}

/** The reason given with the current exit code, if any. */
export function exitReason(): string | undefined {
  return reason;
}

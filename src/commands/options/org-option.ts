import type { Command } from 'commander';
import type { Config } from '../../config.ts';
import type { OrgSettings } from '../../settings/orgs-file.ts';
import { UsageError } from './exit-codes.ts';

/** `--org SLUG` may be given several times; each adds one. */
function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

/** The global `--org` option (every command inherits it: before or after the command's name). */
export function addOrgOption(program: Command): Command {
  return program.option('--org <slug>', 'the organisation to work on (repeat for several, or "all"); default: the only one configured', collect);
}

/** The `--org` values given to this command or the program, if any. */
export function requestedOrgs(command: Command): string[] {
  const value = command.optsWithGlobals<{ org?: string[] }>().org;
  return value ?? [];
}

/**
 * The organisations a command works on: the ones named, all of them for `all`, the
 * only one when none is named; otherwise a usage error naming the choices.
 */
export function selectOrgs(config: Pick<Config, 'orgs'>, requested: readonly string[]): OrgSettings[] {
  const slugs = config.orgs.map((org) => org.slug);
  if (requested.length === 0) {
    if (config.orgs.length === 1) return [config.orgs[0]!];
    throw new UsageError(`${config.orgs.length} organisations are configured (${slugs.join(', ')}): name one with --org SLUG, several with --org repeated, or --org all`);
  }
  if (requested.includes('all')) return [...config.orgs];
  const unknown = requested.filter((slug) => !slugs.includes(slug));
  if (unknown.length > 0) throw new UsageError(`--org ${unknown.join(', ')}: no such organisation; configured: ${slugs.join(', ')} (or all)`);
  return config.orgs.filter((org) => requested.includes(org.slug));
}

/** The one organisation of a command that works on one at a time. */
export function selectOneOrg(config: Pick<Config, 'orgs'>, requested: readonly string[]): OrgSettings {
  const orgs = selectOrgs(config, requested);
  if (orgs.length !== 1) throw new UsageError(`this command works on one organisation at a time; name one with --org SLUG (configured: ${config.orgs.map((o) => o.slug).join(', ')})`);
  return orgs[0]!;
}

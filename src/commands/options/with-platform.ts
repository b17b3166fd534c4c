import { soleOrg, type Config } from '../../config.ts';
import type { OrgSettings } from '../../settings/orgs-file.ts';
import type { Logger } from '../../runtime/log.ts';
import { createPlatformClient, platformClientOptionsFromConfig } from '../../platform/client.ts';
import { PlatformError } from '../../platform/errors.ts';
import type { PlatformClient } from '../../platform/types.ts';
import { EXIT, exitWith, isRefusedKey, isUnreachablePlatform } from './exit-codes.ts';

/**
 * Runs a command that needs only the platform (no Postgres, no queue): builds the
 * client as the app does (same shared request budget), and turns a platform error
 * into its code, said last: exit status 2 for a refused API key or an API URL where
 * nothing answers (the configuration's fault), 1 for anything else the platform answered.
 */
export async function withPlatform(config: Config, log: Logger, fn: (platform: PlatformClient) => Promise<void>, org: OrgSettings = soleOrg(config)): Promise<void> {
  const platform = createPlatformClient(platformClientOptionsFromConfig(config, org, log));
  try {
    await fn(platform);
  } catch (error) {
    if (!(error instanceof PlatformError)) throw error;
    // The URL's fault says it whole (it names the setting first); the rest keep their code in front.
    if (isUnreachablePlatform(error)) exitWith(EXIT.refused, error.message);
    else exitWith(isRefusedKey(error) ? EXIT.refused : EXIT.failed, `${error.code}: ${error.message}`);
  } finally {
    await platform.close();
  }
}

import type { Config } from '../../config.ts';
import type { Logger } from '../../runtime/log.ts';
import type { AnyJobDefinition } from '../../queue/define-job.ts';

/** What src/cli.ts hands every command: how to read config, how to log, which jobs exist. */
export interface CommandDeps {
  loadConfig(): Config;
  createLogger(config: Config): Logger;
  jobs: readonly AnyJobDefinition[];
  /** The process environment, read by src/cli.ts: for a command that builds its own configuration (the demo). */
  env: Readonly<Record<string, string | undefined>>;
}

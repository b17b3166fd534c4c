import type { Config } from '../config.ts';
import type { JobQueue } from '../queue/job-queue.ts';
import type { HeldDecisionDeps } from '../provisioning/index.ts';
import type { Logger } from '../runtime/log.ts';
import type { OrgScopes } from '../warehouse/scope.ts';

/** What the console is given: its own file, so the server (server.ts) and its pages' routes (routes/) both take it without importing each other. */
export interface ConsoleDeps {
  config: Config;
  /**
   * Organisation data through each organisation's scoped handle (the pages' queries);
   * `unscoped` (no organisation's rows) serves the sessions and the deployment-wide audit.
   */
  scopes: OrgScopes;
  queue: JobQueue;
  log: Logger;
  /** Dependency checks for the Overview (postgres, redis): the failures by name. */
  health: () => Promise<Record<string, string>>;
  /** What drift repair (`reconcile --fix`) and deciding a held plan of one organisation need, its platform client included; built on first use. */
  repair: (org: string) => HeldDecisionDeps;
}

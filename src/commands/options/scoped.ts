import type { App } from '../../runtime/app.ts';
import type { OrgScope } from '../../warehouse/scope.ts';

/**
 * The app narrowed to one organisation, as the wings' deps take it: its `db` and
 * `withPgClient` are the organisation's scoped handle's (Postgres shows them that
 * organisation's rows only), so a command cannot reach another organisation's data.
 */
export function scopedApp(app: App, org: string): App & { org: string; scope: OrgScope; db: OrgScope['db']; withPgClient: OrgScope['lend'] } {
  const scope = app.scopes.scope(org);
  return { ...app, org, scope, db: scope.db, withPgClient: scope.lend };
}

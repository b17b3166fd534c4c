import type { App } from '../../runtime/app.ts';
import type { OrgScope } from '../../warehouse/scope.ts';

/**
 * The app narrowed to the organisation a command's `--org` chose, as the wings' deps take
 * it: its `scope` is the organisation's handle (Postgres shows it that organisation's rows
 * only, and the stores read the organisation from it), so a command cannot reach another
 * organisation's data. `org` names it to the queue (a sync's jobs).
 */
export function scopedApp(app: App, org: string): App & { org: string; scope: OrgScope } {
  return { ...app, org, scope: app.scopes.scope(org) };
}

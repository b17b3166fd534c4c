import type { ConsoleRole } from '../settings/console-users.ts';
import type { Scope } from './scope.ts';

/** Who is looking at a console page, and at which organisations: what every page is rendered for. */
export interface Viewer {
  name: string;
  role: ConsoleRole;
  csrfToken: string;
  /** The organisations this page shows (the selector's choice). */
  scope: Scope;
  /** This page's path and query, where the selector comes back to. */
  path: string;
  /** What the change before this page did (Post/Redirect/Get): shown once, at the top. */
  flash?: string | undefined;
}

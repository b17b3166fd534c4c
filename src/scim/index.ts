/**
 * The SCIM wing's entry: what the other wings (the console) may use of it. Another wing
 * imports the SCIM wing through this file only (.dependency-cruiser.mjs,
 * docs/architecture.md "The rules"); the commands and jobs/ may reach further in. The
 * composition registers SCIM's held source from src/scim/held.ts.
 */

/** Users set aside because their stored resource cannot be planned (scim_users). */
export { quarantinedUsersOf, type QuarantinedUser } from './store.ts';

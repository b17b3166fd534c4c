-- The platform state (src/scim/platform-state.ts) of the version last planned: a later
-- version with the same platform state (a title, a department: HR data only) needs no plan
-- of its own while the employee's actions are still queued. Null until a version is planned.
alter table trainsync.scim_users add column planned_state text;

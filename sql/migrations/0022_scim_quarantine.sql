-- A SCIM User whose change cannot be planned (its resource fails the mapping, the snapshot
-- refuses a value) once its write was answered 2xx: set aside, with the reason, rather than
-- left pending (the sweep would try it again every second, for good). `pending` is false
-- while it is quarantined, so nothing waits for it; the next write of the User (a PUT, a
-- PATCH, a DELETE, a group change) clears both columns and plans it again.
-- Read by `trainsync status`, the console's provisioning page and trainsync_scim_quarantined.
alter table trainsync.scim_users add column quarantined_at timestamptz;
alter table trainsync.scim_users add column quarantine_reason text;

create index scim_users_quarantined_idx on trainsync.scim_users (org, quarantined_at) where quarantined_at is not null;

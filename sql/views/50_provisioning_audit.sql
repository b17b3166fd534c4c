-- Every provisioning action with the employee's current identity and the feed that
-- planned it. Operational data: schema trainsync, not training. Per organisation: the
-- identity and the feed are the action's own organisation's (ids repeat across them).
-- group_name: the group's name as the last groups sync read it (null when none did);
-- last, so `create or replace` can add it to a view that exists.
create or replace view trainsync.provisioning_audit with (security_invoker = true) as
select
  a.id,
  a.action_id,
  a.employee_id,
  a.email,
  a.kind,
  a.group_id,
  a.status,
  a.error_code,
  a.error_message,
  a.attempts,
  a.before,
  a.after,
  a.feed_hash,
  f.path        as feed_path,
  f.mode        as feed_mode,
  a.created_at,
  a.updated_at,
  a.finished_at,
  extract(epoch from (a.finished_at - a.created_at))::double precision as seconds_to_finish,
  i.platform_user_id,
  i.active      as currently_active,
  a.org,
  g.name        as group_name,
  -- Which source planned the action (feed, scim, reconcile) and why (0018); null for a password change.
  a.source,
  a.reason
from trainsync.provisioning_actions a
left join trainsync.identities i on i.org = a.org and i.employee_id = a.employee_id
left join training.groups g on g.org = a.org and g.group_id = a.group_id
left join lateral (
  select path, mode from trainsync.feeds
  where feeds.org = a.org and feeds.hash = a.feed_hash
  order by created_at desc, id desc
  limit 1
) f on true;

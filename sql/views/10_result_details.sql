-- Views apply in file-name order: a view that reads another sorts after it.
-- One row per current result, with its course name and whether it passed.
-- passed: score / maximum_score * 100 >= the pass rate (the result's own, else the
-- course's); null when there is no pass rate, no score or no maximum score (a course
-- without questions), as the platform's own `passed` flag is.
create or replace view training.result_details with (security_invoker = true) as
select
  r.result_id,
  r.user_id,
  r.course_id,
  c.name as course_name,
  r.multi_course_result_id,
  r.is_complete,
  r.date_completed,
  r.score,
  r.maximum_score,
  coalesce(r.pass_rate, c.pass_rate::integer) as effective_pass_rate,
  case
    when coalesce(r.pass_rate, c.pass_rate) is null or r.score is null
      or r.maximum_score is null or r.maximum_score <= 0 then null
    -- Integer arithmetic: no rounding at the boundary.
    else r.score::bigint * 100 >= coalesce(r.pass_rate, c.pass_rate)::bigint * r.maximum_score
  end as passed,
  r.course_type,
  -- The organisation whose key listed the result (appended: CREATE OR REPLACE keeps the
  -- columns before it); its course is that organisation's row of a shared course.
  r.org
from training.results r
-- The course row is joined even when removed: its name still labels old results.
left join training.courses c on c.org = r.org and c.course_id = r.course_id
where r.removed_at is null;

comment on view training.result_details is
  'Current results with course name and passed (null when no pass rate or no maximum score).';

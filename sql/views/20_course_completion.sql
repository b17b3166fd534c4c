-- Per organisation and current course (a shared course has a row per organisation, with
-- that organisation's pass rate and learners): distinct learners with a result, how many
-- completed, and how many passed a completed result (result_details.passed is the score
-- test alone; an unfinished attempt does not count as a pass here).
-- completion_rate is a fraction 0..1 (null when the course has no learners).
create or replace view training.course_completion with (security_invoker = true) as
select
  c.course_id,
  c.name as course_name,
  c.pass_rate,
  count(distinct d.user_id) as learners,
  count(distinct d.user_id) filter (where d.is_complete) as completed,
  count(distinct d.user_id) filter (where d.is_complete and d.passed) as passed,
  round(
    (count(distinct d.user_id) filter (where d.is_complete))::numeric
      / nullif(count(distinct d.user_id), 0),
    4
  ) as completion_rate,
  c.org
from training.courses c
left join training.result_details d on d.org = c.org and d.course_id = c.course_id
where c.removed_at is null
group by c.org, c.course_id, c.name, c.pass_rate;

comment on view training.course_completion is
  'Per organisation and course: distinct learners, completed, passed; completion_rate = completed / learners (0..1).';

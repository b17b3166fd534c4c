import { CronExpressionParser } from 'cron-parser';

/**
 * How long a schedule may leave between two runs: the longest gap between two consecutive
 * fires of its cron line (UTC), so a weekday job's is the weekend's and a job on the 31st
 * waits two months. The "data stale" alert and the freshness view compare the age of a
 * resource's last complete run with it.
 *
 * Read over at most FIRES fires within HORIZON_DAYS days from a fixed Monday (the answer
 * must not change with the day a worker starts); a line that fires less than twice in that
 * span has no bound (null). Memoised per line: the organisations' spread lines repeat.
 */

const FIRES = 1_000;
const HORIZON_DAYS = 400;
/** A Monday at midnight UTC, in a leap year: weekday and month-end patterns meet their longest gap within the horizon. */
const FROM = Date.UTC(2024, 0, 1);

const gaps = new Map<string, number | null>();

export function longestGapSeconds(pattern: string): number | null {
  const known = gaps.get(pattern);
  if (known !== undefined || gaps.has(pattern)) return known ?? null;
  const fires = CronExpressionParser.parse(pattern, { tz: 'UTC', currentDate: new Date(FROM), endDate: new Date(FROM + HORIZON_DAYS * 86_400_000) });
  let previous: number | undefined;
  let longest = 0;
  for (let n = 0; n < FIRES && fires.hasNext(); n++) {
    const at = fires.next().getTime();
    if (previous !== undefined) longest = Math.max(longest, at - previous);
    previous = at;
  }
  const seconds = longest > 0 ? Math.round(longest / 1000) : null;
  gaps.set(pattern, seconds);
  return seconds;
}

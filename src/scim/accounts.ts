import type { PgLender } from '../warehouse/transaction.ts';

/**
 * Gives employees without an account the one their create job made (a SCIM create is
 * answered before the platform call, so its employee row is written without it). Only
 * rows with user_id null are looked at (an index range), so the sweep can run it often.
 */
export async function fillNewAccounts(lend: PgLender, org: string): Promise<number> {
  return lend(async (client) => {
    const { rowCount } = await client.query(
      `update training.employees e set user_id = i.platform_user_id, updated_at = clock_timestamp()
       from trainsync.identities i
       where e.org = $1 and e.user_id is null and i.org = e.org and i.employee_id = e.employee_id and i.platform_user_id is not null`,
      [org],
    );
    return rowCount ?? 0;
  });
}

import type pg from 'pg';

export interface SeatObservation {
  observedAt: Date;
  /** null when not applicable. */
  seatsInUse: number | null;
  totalSeats: number | null;
  /** false when the platform answered NO_UNLIMITED_PLAN. */
  applicable: boolean;
}

/** Records one seat observation of the organisation; a second one at the same instant replaces it. */
export async function insertSeatUsage(client: pg.PoolClient | pg.Pool, org: string, observation: SeatObservation): Promise<void> {
  await client.query(
    `insert into training.seat_usage (org, observed_at, seats_in_use, total_seats, applicable)
     values ($5, $1, $2, $3, $4)
     on conflict (org, observed_at) do update set
       seats_in_use = excluded.seats_in_use, total_seats = excluded.total_seats, applicable = excluded.applicable`,
    [observation.observedAt, observation.seatsInUse, observation.totalSeats, observation.applicable, org],
  );
}

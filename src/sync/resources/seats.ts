import { SEATS } from '../../platform/listings.ts';
import type { Seats } from '../../platform/schemas.ts';
import type { ReadingResource } from './resource.ts';

/** Seats in use and in total, one row per run; "not applicable" without an unlimited plan. */
export const seats: ReadingResource<Seats> = {
  name: 'seats',
  kind: 'reading',
  cron: '0 * * * *',
  endpoint: SEATS,
  table: {
    table: 'training.seat_usage',
    key: 'observed_at',
    columns: ['seats_in_use', 'total_seats', 'applicable'],
    row: (s) => (s ? { seats_in_use: s.seatsInUse, total_seats: s.totalSeats, applicable: true } : { seats_in_use: null, total_seats: null, applicable: false }),
  },
  unavailable: { code: 'NO_UNLIMITED_PLAN', note: 'not applicable (NO_UNLIMITED_PLAN)' },
};

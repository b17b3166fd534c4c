import { PlatformError } from '../../platform/errors.ts';
import type { PlatformClient } from '../../platform/types.ts';

export interface SeatsInfo {
  free: number | undefined;
  note: string;
}

/** Free seats from GET users/seats; undefined (no seat check) without an unlimited plan. */
export async function freeSeats(platform: PlatformClient): Promise<SeatsInfo> {
  try {
    const seats = await platform.getSeats();
    const free = Math.max(0, seats.totalSeats - seats.seatsInUse);
    return { free, note: `${seats.seatsInUse} of ${seats.totalSeats} seats in use, ${free} free` };
  } catch (error) {
    if (error instanceof PlatformError && error.code === 'NO_UNLIMITED_PLAN') return { free: undefined, note: 'seats: not applicable (NO_UNLIMITED_PLAN); creates are not checked against seats' };
    throw error;
  }
}

export const SEATS_NOT_READ: Record<'unreadable' | 'unchecked', SeatsInfo> = {
  unreadable: { free: undefined, note: 'seats: not checked (the feed could not be read)' },
  unchecked: { free: undefined, note: 'seats: not checked (the jobs meet the seat limit)' },
};

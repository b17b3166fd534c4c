import type { MaxDisable } from '../../settings/max-disable.ts';

export const DEFAULT_MAX_DISABLE_FLOOR = 5;
export const DEFAULT_MAX_DISABLE_PERCENT = 10;

/** The number of disables a plan may hold, given the active applied employees. */
export function resolveMaxDisable(option: MaxDisable | undefined, activeCount: number): number {
  if (option === undefined) {
    return Math.max(DEFAULT_MAX_DISABLE_FLOOR, Math.floor((activeCount * DEFAULT_MAX_DISABLE_PERCENT) / 100));
  }
  if (typeof option === 'number') return option;
  return Math.floor((activeCount * option.percent) / 100);
}

export function describeMaxDisable(option: MaxDisable | undefined, activeCount: number): string {
  const limit = resolveMaxDisable(option, activeCount);
  if (option === undefined) {
    return `${limit} (the default: the larger of ${DEFAULT_MAX_DISABLE_FLOOR} and ${DEFAULT_MAX_DISABLE_PERCENT}% of ${activeCount} active employees)`;
  }
  if (typeof option === 'number') return `${limit} (--max-disable ${option})`;
  return `${limit} (--max-disable ${option.percent}% of ${activeCount} active employees)`;
}

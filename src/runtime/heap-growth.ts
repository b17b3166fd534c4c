import v8 from 'node:v8';

/**
 * How far V8 lets the old generation grow past what the last full collection kept, in
 * percent. A load streams pages through the young generation, and what is in flight at
 * each scavenge (pages read ahead, a batch's text being gathered) is promoted; left to
 * itself V8 raises the old generation's limit to about four times the live heap on a fast
 * load, so a 400,000-result first load peaked at 193–216 MB of RSS for a live heap of
 * 24 MB, and more results meant a higher peak. At 100 (the limit twice the live heap)
 * the peak was 151–158 MB, with throughput and CPU a result within their run-to-run
 * spread; 50 saved 10 MB more for about 1 µs more CPU a result (docs/benchmarks.md, "Memory"). The
 * flag is read at every collection, so setting it at start-up takes effect without a
 * command-line option.
 */
export const HEAP_GROWING_PERCENT = 100;

/** Applies HEAP_GROWING_PERCENT to this process, unless `node --heap-growing-percent=…` chose another. */
export function limitHeapGrowth(): void {
  if (process.execArgv.some((arg) => arg.startsWith('--heap-growing-percent') || arg.startsWith('--heap_growing_percent'))) return;
  v8.setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
}

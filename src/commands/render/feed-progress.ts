import { stat } from 'node:fs/promises';
import type { FeedReadProgress } from '../../provisioning/feed/types.ts';
import { createProgressDisplay, type ProgressDisplayOptions } from './progress-display.ts';

export interface FeedProgress {
  /** Give to readFeed / readFeedSummary (`onProgress`). */
  onProgress: FeedReadProgress;
  /** The read ended: the line says done (or how it ended) and the display lets go of the terminal. */
  stop(state?: string): void;
}

const MB = 1024 * 1024;
/** Smaller files read in well under a second: no line for them (the example feed's screen stays as it was). */
export const FEED_PROGRESS_MIN_BYTES = MB;

/**
 * A line on stderr while a feed of 1 MB or more is read (MB of the file, rows so far), when
 * stderr is a terminal; anywhere else nothing at all (no log records: the read is one step, not a job).
 * A 300,000-row feed takes seconds to read; without it the command looks hung.
 */
export async function feedReadProgress(file: string, options: Omit<ProgressDisplayOptions, 'log'> = {}): Promise<FeedProgress> {
  const size = await stat(file).then((s) => s.size).catch(() => 0);
  if (size < FEED_PROGRESS_MIN_BYTES) return { onProgress: () => undefined, stop: () => undefined };
  const display = createProgressDisplay(options);
  const total = Math.max(1, Math.ceil(size / MB));
  let shown = -1;
  let records = 0;
  const show = (bytes: number): void => display.update('feed', { resource: 'reading feed', done: Math.min(total, Math.floor(bytes / MB)), total, unit: 'MB', rows: records });
  return {
    onProgress: (bytes, read) => {
      records = read;
      // One update per MB read: the display draws at most a few times a second anyway.
      const mb = Math.floor(bytes / MB);
      if (mb === shown) return;
      shown = mb;
      show(bytes);
    },
    stop: (state = 'done') => {
      if (shown >= 0) {
        show(size);
        display.finish('feed', state);
      }
      display.stop();
    },
  };
}

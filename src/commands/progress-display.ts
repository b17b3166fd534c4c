import cliProgress from 'cli-progress';
import { z } from 'zod';

const progressSchema = z.looseObject({
  resource: z.string(),
  pages: z.number(),
  rows: z.number(),
  windowsDone: z.number().optional(),
  windowsTotal: z.number().optional(),
});

export interface ProgressDisplay {
  update(key: string, progress: unknown): void;
  stop(): void;
}

/**
 * Progress of long jobs: bars on a terminal, a plain line every few seconds otherwise
 * (logs and CI), always on stderr so stdout keeps only the summary.
 */
export function createProgressDisplay(stream: NodeJS.WriteStream = process.stderr): ProgressDisplay {
  if (stream.isTTY) {
    const multibar = new cliProgress.MultiBar(
      {
        stream,
        clearOnComplete: false,
        hideCursor: true,
        format: ' {resource} |{bar}| {value}/{total} windows | {pages} pages | {rows} rows',
      },
      cliProgress.Presets.shades_classic,
    );
    const bars = new Map<string, cliProgress.SingleBar>();
    return {
      update(key, raw) {
        const parsed = progressSchema.safeParse(raw);
        if (!parsed.success) return;
        const p = parsed.data;
        const payload = { resource: p.resource.padEnd(8), pages: p.pages, rows: p.rows };
        let bar = bars.get(key);
        if (!bar) {
          bar = multibar.create(p.windowsTotal ?? 1, 0, payload);
          bars.set(key, bar);
        }
        if (p.windowsTotal !== undefined) bar.setTotal(p.windowsTotal);
        bar.update(p.windowsDone ?? 0, payload);
      },
      stop: () => multibar.stop(),
    };
  }
  const lastPrinted = new Map<string, number>();
  return {
    update(key, raw) {
      const parsed = progressSchema.safeParse(raw);
      if (!parsed.success) return;
      const now = Date.now();
      if (now - (lastPrinted.get(key) ?? 0) < 5_000) return;
      lastPrinted.set(key, now);
      const p = parsed.data;
      const windows = p.windowsTotal === undefined ? '' : ` windows ${p.windowsDone ?? 0}/${p.windowsTotal}`;
      stream.write(`progress ${p.resource}:${windows} pages ${p.pages} rows ${p.rows}\n`);
    },
    stop() {},
  };
}

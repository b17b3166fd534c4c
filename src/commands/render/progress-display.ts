import cliProgress from 'cli-progress';
import { z } from 'zod';
import type { Logger } from '../../runtime/log.ts';
import { fitWidth, stderrTerminal, type Terminal } from './terminal.ts';

const progressSchema = z.looseObject({
  resource: z.string(),
  pages: z.number().optional(),
  rows: z.number().optional(),
  windowsDone: z.number().optional(),
  windowsTotal: z.number().optional(),
  /** Provisioning: actions of one kind finished and planned. */
  done: z.number().optional(),
  total: z.number().optional(),
  unit: z.string().optional(),
});
type Progress = z.infer<typeof progressSchema>;

export interface ProgressDisplay {
  /** The latest progress of one line (a job, an action kind); lines appear in first-seen order. */
  update(key: string, progress: unknown): void;
  /** Marks a line finished with a word (done, failed, incomplete): no bar is left looking stuck. */
  finish(key: string, state: string): void;
  /** Leaves the last state on screen; later lines are written below it. */
  stop(): void;
}

const BAR_WIDTH = 16;
const number = new Intl.NumberFormat('en');

/** One progress line, at most `width` characters: resource, bar (when there is a total), counts, state. */
export function progressLine(p: Progress, state: string, width: number): string {
  const total = p.windowsTotal ?? p.total;
  // A finished line never reads "0/1": done means every window or action went through.
  const done = state === 'done' && total !== undefined ? total : (p.windowsDone ?? p.done ?? 0);
  const parts = [` ${p.resource.padEnd(14)}`];
  if (total !== undefined && total > 0) {
    const filled = state === 'done' ? BAR_WIDTH : Math.min(BAR_WIDTH, Math.round((done / total) * BAR_WIDTH));
    parts.push(`${'█'.repeat(filled)}${'░'.repeat(BAR_WIDTH - filled)}`, `${number.format(done)}/${number.format(total)} ${p.unit ?? (p.windowsTotal !== undefined ? 'windows' : '')}`.trimEnd());
  }
  if (p.pages !== undefined) parts.push(`${number.format(p.pages)} pages`);
  if (p.rows !== undefined) parts.push(`${number.format(p.rows)} rows`);
  parts.push(state);
  return fitWidth(parts.join('  '), width);
}

export interface ProgressDisplayOptions {
  /** Off a terminal, progress is a log record (info) here every few seconds; without it, nothing. */
  log?: Logger;
  terminal?: Terminal;
  stream?: NodeJS.WriteStream;
}

/** How often, off a terminal, one key's progress is logged. */
const LOG_EVERY_MS = 5_000;

/**
 * Progress of long jobs: one live line per key on a terminal (log records are written
 * above them, see terminal.ts); anywhere else a log record every few seconds, so stderr
 * stays JSON lines for whatever reads it. Always on stderr: stdout keeps the summary.
 */
export function createProgressDisplay(options: ProgressDisplayOptions = {}): ProgressDisplay {
  const terminal = options.terminal ?? stderrTerminal;
  const stream = options.stream ?? process.stderr;
  if (terminal.isTty) {
    const width = (): number => Math.max(20, terminal.columns - 1);
    // Made at the first update: a command with nothing to show leaves no trace on the screen.
    let multibar: cliProgress.MultiBar | undefined;
    let detach = (): void => undefined;
    const bars = (): cliProgress.MultiBar => {
      if (multibar) return multibar;
      const created = new cliProgress.MultiBar({
        stream,
        clearOnComplete: false,
        hideCursor: true,
        gracefulExit: false,
        // Our own line, cut to the width: the terminal never wraps a progress line.
        format: (_options, _params, payload: { line?: string }) => payload.line ?? '',
      });
      detach = terminal.attach({ log: (text) => created.log(text) });
      multibar = created;
      return created;
    };
    const lines = new Map<string, { bar: cliProgress.SingleBar; last: Progress; state: string }>();
    const render = (key: string, last: Progress, state: string): void => {
      let entry = lines.get(key);
      const line = progressLine(last, state, width());
      if (!entry) {
        entry = { bar: bars().create(1, 0, { line }), last, state };
        lines.set(key, entry);
      }
      entry.last = last;
      entry.state = state;
      entry.bar.update(0, { line });
    };
    let stopped = false;
    return {
      update(key, raw) {
        const parsed = progressSchema.safeParse(raw);
        // Merged over the last update: a final one with totals keeps the windows it does not repeat.
        if (parsed.success && !stopped) render(key, { ...lines.get(key)?.last, ...parsed.data }, lines.get(key)?.state ?? 'running');
      },
      finish(key, state) {
        const entry = lines.get(key);
        if (entry && !stopped) render(key, entry.last, state);
      },
      stop() {
        if (stopped) return;
        stopped = true;
        if (!multibar) return;
        multibar.update();
        multibar.stop();
        detach();
      },
    };
  }
  const lastLogged = new Map<string, number>();
  // Stopped: no record after the command's last line (a progress event can still arrive while the wait is torn down).
  let stopped = false;
  return {
    update(key, raw) {
      const parsed = progressSchema.safeParse(raw);
      if (!parsed.success || options.log === undefined || stopped) return;
      const now = Date.now();
      if (now - (lastLogged.get(key) ?? 0) < LOG_EVERY_MS) return;
      lastLogged.set(key, now);
      const p = parsed.data;
      const windows = p.windowsTotal === undefined ? '' : ` windows ${p.windowsDone ?? 0}/${p.windowsTotal}`;
      const actions = p.total === undefined ? '' : ` ${p.done ?? 0}/${p.total} ${p.unit ?? ''}`.trimEnd();
      const pages = p.pages === undefined ? '' : ` pages ${p.pages}`;
      const rows = p.rows === undefined ? '' : ` rows ${p.rows}`;
      options.log.info({ progress: p }, `progress ${p.resource}:${windows}${actions}${pages}${rows}`);
    },
    finish() {},
    stop() {
      stopped = true;
    },
  };
}

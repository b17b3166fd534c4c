import { Writable } from 'node:stream';
import { fitWidth, lineWidth, wrapLine } from '../../lib/text-width.ts';
import { showControls } from '../../lib/terminal-safe.ts';

export { fitWidth, lineWidth, MAX_WIDTH, outputWidth, splitWord, wrapLine } from '../../lib/text-width.ts';

/**
 * stderr as a person sees it. While a progress display is live, every line (log records,
 * warnings) is written above its progress lines through it, never across them; otherwise
 * straight to the stream.
 */
export interface LineSink {
  /** Writes `text` (ending in a newline) above the live lines. */
  log(text: string): void;
}

export interface Terminal {
  readonly isTty: boolean;
  /** Columns of the terminal (COLUMNS, else 80) when it is one. */
  readonly columns: number;
  writeLine(text: string): void;
  /** Routes lines through `sink` until the returned function is called. */
  attach(sink: LineSink): () => void;
  /** A pino destination whose lines go through writeLine (a stream: pino-pretty listens to it). */
  readonly logDestination: Writable;
}

export function createTerminal(stream: NodeJS.WriteStream = process.stderr): Terminal {
  let sink: LineSink | undefined;
  let pending = '';
  const writeLine = (text: string): void => {
    const line = text.endsWith('\n') ? text : `${text}\n`;
    if (sink) sink.log(line);
    else stream.write(line);
  };
  return {
    isTty: stream.isTTY === true,
    get columns() {
      return stream.columns || 80;
    },
    writeLine,
    attach(next) {
      sink = next;
      return () => {
        if (sink === next) sink = undefined;
      };
    },
    logDestination: new Writable({
      decodeStrings: false,
      write(chunk: string | Buffer, _encoding, callback) {
        pending += String(chunk);
        let at = pending.indexOf('\n');
        while (at >= 0) {
          writeLine(pending.slice(0, at + 1));
          pending = pending.slice(at + 1);
          at = pending.indexOf('\n');
        }
        callback();
      },
    }),
  };
}

/** The process's stderr: one instance, shared by the logger and the progress display. */
export const stderrTerminal: Terminal = createTerminal(process.stderr);

/**
 * A drawn table's line (box characters │┌├└┬┼┴─): laid out to fit already, never re-wrapped.
 * Escaped: one character above U+00FF in dist/cli.js makes V8 hold the whole bundle's text
 * at two bytes a character, 5 MB more heap in every command (test/build-current.test.ts).
 */
const TABLE_LINE = /^[\u2502\u250c\u251c\u2514\u252c\u253c\u2534\u2500]/;

/**
 * Every line of `text` wrapped to `width` at spaces (see wrapLine), so a terminal never
 * cuts a word; lines of a drawn table are left alone (fitTable draws them to fit).
 */
export function wrapLines(text: string, width: number): string {
  return text
    .split('\n')
    .flatMap((line) => (TABLE_LINE.test(line) ? [line] : wrapLine(line, width)))
    .join('\n');
}

/**
 * `text` for a person, with a final newline: every line wrapped at lineWidth() when the
 * width is known; control characters (from data: an HR value's `ESC[2J`) shown escaped.
 */
export function fitText(text: string, width: number | undefined = lineWidth()): string {
  const body = showControls(text.replace(/\n$/, ''));
  return `${width === undefined ? body : wrapLines(body, width)}\n`;
}

/**
 * A line for a person on stderr, `trainsync: ` first (an error, the reason for an exit).
 * On a terminal: wrapped at its width (a terminal would cut words). Anywhere else (a pipe, a
 * file, a service manager) stderr is JSON lines only, as the log records before it are: the
 * line is one record, `{"level":50,"time":…,"app":"trainsync","exitCode":…,"msg":"trainsync: …"}`
 * (the same text, so a grep for `trainsync: ` finds it either way).
 */
export function stderrLine(text: string, stream: NodeJS.WriteStream = process.stderr, exitCode: number | string | null | undefined = process.exitCode): void {
  stderrText(`trainsync: ${text}`, stream, exitCode);
}

/** `text` on stderr as stderrLine writes it, without the `trainsync: ` (a note, a feed error line). */
export function stderrText(text: string, stream: NodeJS.WriteStream = process.stderr, exitCode: number | string | null | undefined = process.exitCode): void {
  if (stream.isTTY === true) {
    stream.write(fitText(text, lineWidth(stream)));
    return;
  }
  stream.write(`${stderrRecord(text.replace(/\n$/, ''), exitCode, Date.now())}\n`);
}

/** The JSON line stderrLine writes off a terminal: pino's shape (level 50, error), one line whatever the text holds. */
export function stderrRecord(text: string, exitCode: number | string | null | undefined, time: number): string {
  const code = exitCode === undefined || exitCode === null || exitCode === '' ? undefined : Number(exitCode);
  return JSON.stringify({ level: 50, time, app: 'trainsync', ...(code === undefined || Number.isNaN(code) ? {} : { exitCode: code }), msg: text });
}

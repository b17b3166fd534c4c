import { Writable } from 'node:stream';

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

/** Cuts `text` to `width` visible characters (an ellipsis marks the cut). */
export function fitWidth(text: string, width: number): string {
  return text.length <= width ? text : `${text.slice(0, Math.max(0, width - 1))}…`;
}

/**
 * Sentences longer than `width` wrapped at spaces, continued with a two-space indent, so a
 * terminal never cuts a word; lines of a drawn table (box characters) are left alone.
 */
export function wrapLines(text: string, width: number): string {
  return text
    .split('\n')
    .flatMap((line) => {
      if (line.length <= width || /^[│┌├└]/.test(line)) return [line];
      const out: string[] = [];
      let current = '';
      for (const word of line.split(' ')) {
        const next = current === '' ? word : `${current} ${word}`;
        if (next.length > width && current.trim() !== '') {
          out.push(current);
          current = `  ${word}`;
        } else current = next;
      }
      if (current !== '') out.push(current);
      return out;
    })
    .join('\n');
}

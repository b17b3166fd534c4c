import { createRequire } from 'node:module';
import { pino, type Logger, type DestinationStream } from 'pino';
import type PinoPretty from 'pino-pretty';
import type { Config } from '../config.ts';
import { lineWidth, wrapLine } from '../lib/text-width.ts';

export type { Logger };

/** `json` for machines (worker, pipes, files); `pretty` for a person at a terminal. */
export type LogFormat = 'json' | 'pretty';

export interface LoggerOptions {
  level: string;
  /** Unset means auto: pretty when stderr is a terminal and no destination was given, else JSON. */
  format?: LogFormat | undefined;
  /** Where lines go instead of stderr; tests pass a Writable to capture them. */
  destination?: DestinationStream | undefined;
  /** The destination is a person's terminal (the CLI's line writer, which keeps log lines off its progress lines). */
  terminal?: boolean | undefined;
  /** Records left out (a command that reports the same thing itself, once); children too. */
  hide?: ((fields: Readonly<Record<string, unknown>>, message: string | undefined) => boolean) | undefined;
}

/**
 * Paths that must never reach a log line, wherever a caller puts them. The client
 * logs only method/path/status/duration, so this is the second line of defence.
 */
export const REDACTED_PATHS: readonly string[] = [
  'password',
  '*.password',
  '*.*.password',
  'newPassword',
  '*.newPassword',
  'headers.authorization',
  '*.headers.authorization',
  'authorization',
  '*.authorization',
  'apiKey',
  '*.apiKey',
  'secret',
  '*.secret',
  'encryptedPassword',
  '*.encryptedPassword',
];

/** The format to use: LOG_FORMAT when set, else pretty only for a terminal. Pure, so it can be tested. */
export function logFormatFor(config: { readonly LOG_FORMAT?: Config['LOG_FORMAT'] }, isTty: boolean): LogFormat {
  return config.LOG_FORMAT ?? (isTty ? 'pretty' : 'json');
}

/**
 * Builds the process logger. `createLogger(level, destination?)` is the original
 * form and always writes JSON, so existing callers see no change.
 */
export function createLogger(options: LoggerOptions): Logger;
export function createLogger(level: string, destination?: DestinationStream): Logger;
export function createLogger(levelOrOptions: string | LoggerOptions, legacyDestination?: DestinationStream): Logger {
  const { level, format, destination, terminal, hide }: LoggerOptions =
    typeof levelOrOptions === 'string' ? { level: levelOrOptions, format: 'json', destination: legacyDestination } : levelOrOptions;
  // A caller-supplied destination is a pipe or a test sink, never a person (auto means JSON there), unless it says it is a terminal.
  const toTerminal = terminal === true || (destination === undefined && process.stderr.isTTY === true);
  const resolved = format ?? logFormatFor({}, toTerminal);
  // Redaction runs inside pino before a line is serialised, so it covers both formats.
  return pino(
    {
      level,
      base: { app: 'trainsync' },
      redact: { paths: [...REDACTED_PATHS], censor: '[redacted]' },
      ...(hide === undefined
        ? {}
        : {
            hooks: {
              logMethod(args, method) {
                const [first, second] = args as unknown[];
                if (typeof first === 'object' && first !== null && hide(first as Record<string, unknown>, typeof second === 'string' ? second : undefined)) return;
                method.apply(this, args);
              },
            },
          }),
    },
    resolved === 'pretty' ? prettyStream(destination, toTerminal) : (destination ?? pino.destination(2)),
  );
}

/** `12:03:04  WARN: `: the time, the level right-aligned in 5, a colon and a space. */
const PREFIX_WIDTH = 16;

/** Keys that are noise on a terminal (the level and time are already at the start of the line). */
const HIDDEN_KEYS = new Set(['level', 'time', 'msg', 'pid', 'hostname', 'app']);

/**
 * One short line per record: `12:03:04  WARN: message (key=value key=value)`.
 * `sync: true` writes each line before `log.x()` returns, so a CLI that exits right
 * after logging still shows it, and lines stay in order with the tables on stdout.
 */
function prettyStream(destination: DestinationStream | undefined, toTerminal: boolean): DestinationStream {
  // Loaded here, synchronously, only for a person's terminal: every command off a terminal
  // (and every test's CLI child) writes JSON and never pays pino-pretty's ~25 ms of loading.
  const pretty = createRequire(import.meta.url)('pino-pretty') as typeof PinoPretty;
  return pretty({
    // hasColors() honours NO_COLOR, FORCE_COLOR and TERM=dumb for us.
    colorize: toTerminal && process.stderr.hasColors(),
    sync: true,
    destination: destination ?? 2,
    ignore: 'pid,hostname,app',
    // Local time: a person at a terminal reads their own clock; JSON keeps epoch ms.
    translateTime: 'SYS:HH:MM:ss',
    customPrettifiers: {
      time: (time) => String(time),
      // Right-aligned so messages start in the same column for INFO/WARN/ERROR.
      level: (_level, _key, _log, { label, labelColorized }) => ' '.repeat(Math.max(0, 5 - label.length)) + labelColorized,
    },
    // The fields go on the message line; pino-pretty would otherwise print one indented line per field.
    hideObject: true,
    messageFormat: (log, messageKey) => {
      const fields = Object.entries(log)
        .filter(([key]) => key !== messageKey && !HIDDEN_KEYS.has(key))
        .map(([key, value]) => `${key}=${showValue(value)}`);
      const message = typeof log[messageKey] === 'string' ? log[messageKey] : '';
      // Control characters (newlines, terminal escapes from remote data) would break the one-line promise.
      const text = `${message}${fields.length > 0 ? ` (${fields.join(' ')})` : ''}`.replace(/[\u0000-\u001f\u007f-\u009f]+/g, ' ');
      // On a terminal a long record wraps at word boundaries, continued under its message (the
      // terminal would cut words); a file keeps one record per line.
      const width = toTerminal ? lineWidth(process.stderr) : undefined;
      return width === undefined ? text : wrapLine(text, width - PREFIX_WIDTH, '').join(`\n${' '.repeat(PREFIX_WIDTH)}`);
    },
  });
}

function showValue(value: unknown): string {
  if (typeof value === 'string') return /^[^\s"=()]+$/.test(value) ? value : JSON.stringify(value);
  // pino serialises errors as { type, message, stack }: the message is what fits on one line.
  // An AggregateError from a failed connect has an empty message: its code says more.
  if (typeof value === 'object' && value !== null && 'stack' in value) {
    const { message, code, type } = value as { message?: unknown; code?: unknown; type?: unknown };
    return showValue(String(message || code || type));
  }
  return JSON.stringify(value) ?? String(value);
}

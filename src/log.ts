import { pino, type Logger, type DestinationStream } from 'pino';

export type { Logger };

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

/** Builds the process logger; `destination` lets tests capture every line. */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { app: 'trainsync' },
      redact: { paths: [...REDACTED_PATHS], censor: '[redacted]' },
    },
    destination ?? pino.destination(2),
  );
}

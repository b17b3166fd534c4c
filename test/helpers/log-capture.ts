import { Writable } from 'node:stream';
import { createLogger, type Logger } from '../../src/runtime/log.ts';

/** A logger whose JSON lines are kept in `lines` (to search for messages, or for secrets that must not be there). */
export function capturingLogger(level: string): { log: Logger; lines: string[] } {
  const lines: string[] = [];
  const log = createLogger(
    level,
    new Writable({
      write(chunk: Buffer, _encoding, callback) {
        lines.push(chunk.toString('utf8'));
        callback();
      },
    }),
  );
  return { log, lines };
}

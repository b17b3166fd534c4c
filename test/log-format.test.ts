import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { createLogger, logFormatFor } from '../src/runtime/log.ts';

/** A destination that keeps every line; both formats write synchronously, so no waiting is needed. */
function sink(): { stream: Writable; lines: () => string[] } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer | string, _encoding, callback) {
      chunks.push(String(chunk));
      callback();
    },
  });
  return { stream, lines: () => chunks.join('').split('\n').filter((line) => line !== '') };
}

function isJson(line: string): boolean {
  try {
    return typeof JSON.parse(line) === 'object';
  } catch {
    return false;
  }
}

describe('logFormatFor', () => {
  it('is pretty only on a terminal unless LOG_FORMAT says otherwise', () => {
    expect(logFormatFor({}, false)).toBe('json');
    expect(logFormatFor({}, true)).toBe('pretty');
    expect(logFormatFor(loadConfig({ LOG_FORMAT: 'json' }), true)).toBe('json');
    expect(logFormatFor(loadConfig({ LOG_FORMAT: 'pretty' }), false)).toBe('pretty');
    expect(logFormatFor(loadConfig({}), false)).toBe('json');
  });
});

describe('createLogger', () => {
  it('writes JSON to a given destination when the format is left to auto', () => {
    const out = sink();
    createLogger({ level: 'info', destination: out.stream }).info({ reads: 3 }, 'hello');
    const [line] = out.lines();
    expect(JSON.parse(line!)).toMatchObject({ msg: 'hello', reads: 3, app: 'trainsync', level: 30 });
  });

  it('keeps the (level, destination) form writing JSON', () => {
    const out = sink();
    const log = createLogger('warn', out.stream);
    log.info('dropped');
    log.warn('kept');
    expect(out.lines()).toHaveLength(1);
    expect(JSON.parse(out.lines()[0]!)).toMatchObject({ msg: 'kept', level: 40 });
  });

  it('LOG_FORMAT=json forces JSON even on a terminal', () => {
    const out = sink();
    const config = loadConfig({ LOG_FORMAT: 'json' });
    createLogger({ level: config.LOG_LEVEL, format: logFormatFor(config, true), destination: out.stream }).warn('x');
    expect(isJson(out.lines()[0]!)).toBe(true);
  });

  it('writes one short readable line per record in pretty mode', () => {
    const out = sink();
    const log = createLogger({ level: 'info', format: 'pretty', destination: out.stream });
    log.warn({ window: '2024-01-01..2024-01-08', reads: 3 }, 'window kept changing while paged');
    log.child({ job: 'results' }).info({ note: 'two words' }, 'first line\nsecond line');
    log.error({ err: new Error('connect ECONNREFUSED 127.0.0.1:5432') }, 'sync failed');
    const lines = out.lines();
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(/^\d\d:\d\d:\d\d {2}WARN: window kept changing while paged \(window=2024-01-01\.\.2024-01-08 reads=3\)$/);
    expect(lines[1]).toMatch(/^\d\d:\d\d:\d\d {2}INFO: first line second line \(job=results note="two words"\)$/);
    expect(lines[2]).toMatch(/^\d\d:\d\d:\d\d ERROR: sync failed \(err="connect ECONNREFUSED 127\.0\.0\.1:5432"\)$/);
    for (const line of lines) {
      expect(isJson(line)).toBe(false);
      expect(line).not.toMatch(/pid|hostname|trainsync|\u001b/);
    }
  });

  it('redacts secrets in pretty mode too', () => {
    const out = sink();
    const log = createLogger({ level: 'info', format: 'pretty', destination: out.stream });
    log.info({ password: 'hunter2', user: { password: 'hunter3', apiKey: 'k-123456' }, headers: { authorization: 'Bearer abc' } }, 'login');
    const text = out.lines().join('\n');
    expect(text).toContain('login');
    expect(text).toContain('[redacted]');
    for (const secret of ['hunter2', 'hunter3', 'k-123456', 'Bearer abc']) expect(text).not.toContain(secret);
  });

  it('respects the level in pretty mode', () => {
    const out = sink();
    const log = createLogger({ level: 'warn', format: 'pretty', destination: out.stream });
    log.info('quiet');
    log.debug('quieter');
    expect(out.lines()).toEqual([]);
  });
});

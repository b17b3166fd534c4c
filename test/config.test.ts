import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, requirePlatform, requireSecretKey } from '../src/config.ts';
import { parseLookback } from '../src/settings/lookback.ts';

describe('config', () => {
  it('applies the contract defaults and freezes the result', () => {
    const config = loadConfig({});
    // trainsync's own login, and the local superuser as the owner (docs/operator.md, "The role trainsync runs as").
    expect(config.DATABASE_URL).toBe('postgres://trainsync_worker@127.0.0.1:5432/trainsync');
    expect(config.TRAINSYNC_OWNER_DATABASE_URL).toBe('postgres://postgres@127.0.0.1:5432/trainsync');
    expect(config.REDIS_URL).toBe('redis://127.0.0.1:6379');
    expect(config.TRAINSYNC_REQUESTS_PER_SECOND).toBe(10);
    expect(config.LOG_LEVEL).toBe('info');
    expect(config.TRAINSYNC_RESULTS_LOOKBACK).toBe(7);
    expect(config.cronLines).toEqual({});
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('takes the owner from TRAINSYNC_OWNER_DATABASE_URL, else the lock session\'s URL, else DATABASE_URL when set (one login for both)', () => {
    const worker = 'postgres://trainsync_worker:pw@db:5432/t';
    const owner = 'postgres://owner:pw@db:5432/t';
    const lock = 'postgres://owner@direct:5432/t';
    expect(loadConfig({ DATABASE_URL: worker, TRAINSYNC_OWNER_DATABASE_URL: owner, TRAINSYNC_LOCK_DATABASE_URL: lock })).toMatchObject({ DATABASE_URL: worker, TRAINSYNC_OWNER_DATABASE_URL: owner });
    expect(loadConfig({ DATABASE_URL: worker, TRAINSYNC_LOCK_DATABASE_URL: lock }).TRAINSYNC_OWNER_DATABASE_URL).toBe(lock);
    expect(loadConfig({ DATABASE_URL: owner }).TRAINSYNC_OWNER_DATABASE_URL).toBe(owner);
    expect(loadConfig({ DATABASE_URL: '' }).DATABASE_URL).toBe('postgres://trainsync_worker@127.0.0.1:5432/trainsync');
    expect(() => loadConfig({ TRAINSYNC_OWNER_DATABASE_URL: 'owner@db' })).toThrow(/TRAINSYNC_OWNER_DATABASE_URL: got "owner@db"; expected a Postgres URL of the tables' owner/);
  });

  it('keeps every TRAINSYNC_CRON_* line set, and refuses one that is not a cron line', () => {
    expect(loadConfig({ TRAINSYNC_CRON_SEATS: ' */5 * * * * ', TRAINSYNC_CRON_RESULTS: '' }).cronLines).toEqual({ TRAINSYNC_CRON_SEATS: '*/5 * * * *' });
    expect(() => loadConfig({ TRAINSYNC_CRON_DUMMY: 'hourly' })).toThrow(/TRAINSYNC_CRON_DUMMY: got "hourly"; expected a cron line of 5 or 6 fields/);
  });

  it('lists every bad key in one message, with what each should look like', () => {
    let error: unknown;
    try {
      loadConfig({ TRAINSYNC_API_URL: 'not a url', TRAINSYNC_REQUESTS_PER_SECOND: '-3', LOG_LEVEL: 'loud', TRAINSYNC_RESULTS_LOOKBACK: 'P1M', REDIS_URL: 'localhost' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as ConfigError).message;
    for (const key of ['TRAINSYNC_API_URL', 'TRAINSYNC_REQUESTS_PER_SECOND', 'LOG_LEVEL', 'TRAINSYNC_RESULTS_LOOKBACK', 'REDIS_URL']) {
      expect(message).toContain(key);
    }
    expect((error as ConfigError).problems).toHaveLength(5);
    expect(message).toContain('redis://127.0.0.1:6379');
  });

  it('leaves LOG_FORMAT unset (auto) unless it is json or pretty', () => {
    expect(loadConfig({}).LOG_FORMAT).toBeUndefined();
    expect(loadConfig({ LOG_FORMAT: '' }).LOG_FORMAT).toBeUndefined();
    expect(loadConfig({ LOG_FORMAT: 'json' }).LOG_FORMAT).toBe('json');
    expect(loadConfig({ LOG_FORMAT: 'pretty' }).LOG_FORMAT).toBe('pretty');
    expect(() => loadConfig({ LOG_FORMAT: 'yaml' })).toThrow(/LOG_FORMAT: got "yaml"; expected json or pretty/);
  });

  it('treats an empty variable as unset', () => {
    expect(loadConfig({ LOG_LEVEL: '' }).LOG_LEVEL).toBe('info');
  });

  it('never echoes a key value in its error', () => {
    expect(() => loadConfig({ TRAINSYNC_SECRET_KEY: 'short-secret-value' })).toThrow(/TRAINSYNC_SECRET_KEY: set but invalid/);
    expect(() => loadConfig({ TRAINSYNC_SECRET_KEY: 'short-secret-value' })).not.toThrow(/short-secret-value/);
  });

  it('accepts a 32-byte secret key as hex or base64', () => {
    const hex = 'ab'.repeat(32);
    expect(requireSecretKey(loadConfig({ TRAINSYNC_SECRET_KEY: hex })).toString('hex')).toBe(hex);
    const b64 = Buffer.alloc(32, 7).toString('base64');
    expect(requireSecretKey(loadConfig({ TRAINSYNC_SECRET_KEY: b64 }))).toEqual(Buffer.alloc(32, 7));
    expect(() => requireSecretKey(loadConfig({}))).toThrow(/openssl rand -hex 32/);
  });

  it('says which platform settings are missing', () => {
    expect(() => requirePlatform(loadConfig({}))).toThrow(/TRAINSYNC_API_URL[\s\S]*TRAINSYNC_API_KEY/);
    expect(requirePlatform(loadConfig({ TRAINSYNC_API_URL: 'https://x.example', TRAINSYNC_API_KEY: 'k' }))).toEqual({ apiUrl: 'https://x.example', apiKey: 'k' });
  });

  it('reads the lookback as whole days or an ISO-8601 duration of days or weeks', () => {
    expect(parseLookback('7')).toBe(7);
    expect(parseLookback('P7D')).toBe(7);
    expect(parseLookback('p2w')).toBe(14);
    expect(parseLookback('P1W3D')).toBe(10);
    expect(parseLookback('P1M')).toBeUndefined();
    expect(parseLookback('PT12H')).toBeUndefined();
    expect(parseLookback('7.5')).toBeUndefined();
  });
});

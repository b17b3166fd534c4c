import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { judgePerKeyBudget, type KeyRecord } from '../bench/budget-verdict.ts';
import { startSimulator, type RunningSimulator } from '../src/simulator/index.ts';
import { keyArrivalFigures } from '../src/simulator/request-log.ts';

/**
 * The per-key budget check of the many-organisation bench (bench/orgs-thousand.ts): the
 * simulator's untrimmed per-key arrivals, and the verdict that judges each key on a complete
 * record. Each must be able to say "over the budget".
 */

const spaced = (n: number, gapMs: number, from = 1_000_000): number[] => Array.from({ length: n }, (_, i) => from + i * gapMs);

describe('counting one key against its budget', () => {
  it('finds 11 arrivals in one sliding second, and none over at 10 a second', () => {
    const over = keyArrivalFigures(spaced(11, 90), 1000, 10);
    expect(over).toMatchObject({ total: 11, maxInAnyWindow: 11, windowsOverLimit: 1 });
    expect(over.tightestSpanMs).toBe(900);
    const within = keyArrivalFigures(spaced(30, 105), 1000, 10);
    expect(within).toMatchObject({ total: 30, maxInAnyWindow: 10, windowsOverLimit: 0 });
    expect(within.tightestSpanMs).toBe(1050);
  });

  it('counts two separate bursts as two windows over, and a clock second by itself', () => {
    const times = [...spaced(12, 50, 10_000), ...spaced(12, 50, 20_000)];
    expect(keyArrivalFigures(times, 1000, 10)).toMatchObject({ maxInAnyWindow: 12, windowsOverLimit: 2, maxInAnyClockSecond: 12 });
    // Without a limit: the counts only.
    expect(keyArrivalFigures(times, 1000)).toMatchObject({ windowsOverLimit: 0, tightestSpanMs: null });
  });
});

describe('the simulator counts every request of each key', () => {
  let sim: RunningSimulator;
  beforeAll(async () => {
    sim = await startSimulator({
      seed: 9,
      sizes: { courses: 2, users: 5, results: 20, groups: 1 },
      organisations: [
        { apiKey: 'per-key-a', name: 'alpha' },
        { apiKey: 'per-key-b', name: 'beta' },
      ],
    });
  });
  afterAll(async () => {
    await sim.close();
  });

  const get = (key: string): Promise<Response> => fetch(`${sim.url}/api/v2/courses`, { headers: { authorization: `Bearer ${key}` } });
  const perKey = async (query: string): Promise<Array<{ name: string; total: number; maxInAnyWindow: number; windowsOverLimit: number }>> =>
    ((await (await fetch(`${sim.url}/__simulator/requests/per-key?${query}`)).json()) as { organisations: Array<{ name: string; total: number; maxInAnyWindow: number; windowsOverLimit: number }> }).organisations;

  it('reports a key over its limit (an hour window, so no timing is assumed), and one within it', async () => {
    await fetch(`${sim.url}/__simulator/requests/reset`, { method: 'POST' });
    for (let i = 0; i < 11; i += 1) await (await get('per-key-a')).arrayBuffer();
    for (let i = 0; i < 3; i += 1) await (await get('per-key-b')).arrayBuffer();
    await (await get('no-such-key')).arrayBuffer();
    const figures = await perKey('windowMs=3600000&limit=10');
    expect(figures.map((o) => [o.name, o.total, o.maxInAnyWindow, o.windowsOverLimit])).toEqual([
      ['alpha', 11, 11, 1],
      ['beta', 3, 3, 0],
    ]);
    await fetch(`${sim.url}/__simulator/requests/reset`, { method: 'POST' });
    expect((await perKey('')).map((o) => o.total)).toEqual([0, 0]);
  });

  it('refuses a limit that is not a whole number', async () => {
    expect((await fetch(`${sim.url}/__simulator/requests/per-key?limit=ten`)).status).toBe(400);
  });
});

describe('the bench verdict judges each key on a complete record', () => {
  const key = (requests: number, maxByStamp: number, grants: number[]): KeyRecord => ({ requests, maxByStamp, grants });

  it('fails on a key whose complete grants hold 11 in a second', () => {
    const verdict = judgePerKeyBudget(10, new Map([['a', key(11, 10, spaced(11, 90))], ['b', key(5, 5, spaced(5, 105))]]));
    expect(verdict).toMatchObject({ pass: false, maxPerKey: 11, worstKey: 'a', keysByGrants: 2, keysByStamp: 0 });
    expect(verdict.over).toEqual([{ key: 'a', by: 'grants', count: 11 }]);
  });

  it('falls back to the stamps for a key whose grants the poll missed, and fails on them', () => {
    const verdict = judgePerKeyBudget(10, new Map([['a', key(20, 11, spaced(19, 105))]]));
    expect(verdict).toMatchObject({ pass: false, keysByGrants: 0, keysByStamp: 1, over: [{ key: 'a', by: 'stamp', count: 11 }] });
  });

  it('judges by the capture first when it holds every request, and fails on it', () => {
    const verdict = judgePerKeyBudget(10, new Map([['a', { ...key(11, 10, spaced(11, 105)), captured: spaced(11, 95) }]]));
    expect(verdict).toMatchObject({ pass: false, keysByCapture: 1, over: [{ key: 'a', by: 'capture', count: 11 }] });
    // A capture that missed a request is not used: the grants judge.
    expect(judgePerKeyBudget(10, new Map([['a', { ...key(11, 10, spaced(11, 105)), captured: spaced(10, 95) }]]))).toMatchObject({ pass: true, keysByCapture: 0, keysByGrants: 1 });
  });

  it('passes when every key is within the budget by its complete grants, whatever the late stamps say', () => {
    const verdict = judgePerKeyBudget(10, new Map([['a', key(20, 13, spaced(20, 105))]]));
    expect(verdict).toMatchObject({ pass: true, maxPerKey: 10, keysByGrants: 1, maxByStamp: 13, over: [] });
  });
});

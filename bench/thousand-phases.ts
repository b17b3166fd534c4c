/**
 * Where the wall time of the thousand-organisation bench goes (bench only): from BullMQ's
 * job hashes (when each sync job was added, taken and finished) and trainsync.runs (when
 * each organisation's run started and ended), each as seconds after the sync command was
 * spawned. Read once the load is over.
 */
import { Redis } from 'ioredis';
import type pg from 'pg';
import { clusterSafePrefix } from '../src/lib/redis-target.ts';
import { SYNC_QUEUE } from '../src/queue/names.ts';

export interface Spread {
  n: number;
  min: number;
  p50: number;
  p90: number;
  max: number;
}

export interface ThousandPhases {
  /** Job added (`timestamp`), seconds after the spawn: the command's start-up, then its enqueue loop. */
  enqueued: Spread | null;
  /** Job first taken by a worker (`processedOn` of its last attempt). */
  taken: Spread | null;
  /** Each organisation's first run: started, and its length. */
  runStarted: Spread | null;
  runSeconds: Spread | null;
  /** From a job's add to its run's start: waiting for a free slot. */
  queuedSeconds: Spread | null;
  /** Most runs in progress at once (all workers). */
  maxConcurrentRuns: number;
  runsFinishedAt: number | null;
}

const round = (value: number): number => Number(value.toFixed(2));

export function spread(values: readonly number[]): Spread | null {
  if (values.length === 0) return null;
  const d = [...values].sort((a, b) => a - b);
  const at = (p: number): number => d[Math.min(d.length - 1, Math.max(0, Math.ceil(p * d.length) - 1))]!;
  return { n: d.length, min: round(d[0]!), p50: round(at(0.5)), p90: round(at(0.9)), max: round(d.at(-1)!) };
}

export async function thousandPhases(options: { db: pg.Client; redisUrl: string; queuePrefix: string; spawnedAtMs: number }): Promise<ThousandPhases> {
  const { db, spawnedAtMs } = options;
  const s = (ms: number): number => (ms - spawnedAtMs) / 1000;
  const redis = new Redis(options.redisUrl, { maxRetriesPerRequest: 1 });
  const base = `${clusterSafePrefix(options.queuePrefix, options.redisUrl)}:${SYNC_QUEUE}:`;
  const added = new Map<string, number>();
  const taken: number[] = [];
  try {
    const keys: string[] = [];
    let cursor = '0';
    do {
      const [next, batch] = await redis.scan(cursor, 'MATCH', `${base}*`, 'COUNT', 1000);
      cursor = next;
      for (const key of batch) if (/^\d+$/.test(key.slice(base.length))) keys.push(key);
    } while (cursor !== '0');
    const pipeline = redis.pipeline();
    for (const key of keys) pipeline.hmget(key, 'timestamp', 'processedOn', 'data');
    const replies = (await pipeline.exec()) ?? [];
    replies.forEach(([error, value]) => {
      if (error || !Array.isArray(value)) return;
      const [timestamp, processedOn, data] = value as Array<string | null>;
      const org = data ? (JSON.parse(data) as { org?: string }).org : undefined;
      if (timestamp && org) added.set(org, Number(timestamp));
      if (processedOn) taken.push(s(Number(processedOn)));
    });
  } finally {
    redis.disconnect();
  }
  const { rows } = await db.query<{ org: string; started: number; finished: number | null }>(
    "select distinct on (org) org, extract(epoch from started_at) * 1000 as started, extract(epoch from finished_at) * 1000 as finished from trainsync.runs where resource = 'results' order by org, id",
  );
  const events: Array<[number, number]> = [];
  for (const r of rows) {
    events.push([Number(r.started), 1]);
    if (r.finished !== null) events.push([Number(r.finished), -1]);
  }
  events.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let now = 0;
  let maxConcurrentRuns = 0;
  for (const [, delta] of events) maxConcurrentRuns = Math.max(maxConcurrentRuns, (now += delta));
  const finished = rows.filter((r) => r.finished !== null).map((r) => Number(r.finished));
  return {
    enqueued: spread([...added.values()].map(s)),
    taken: spread(taken),
    runStarted: spread(rows.map((r) => s(Number(r.started)))),
    runSeconds: spread(rows.filter((r) => r.finished !== null).map((r) => (Number(r.finished) - Number(r.started)) / 1000)),
    queuedSeconds: spread(rows.flatMap((r) => (added.has(r.org) ? [(Number(r.started) - added.get(r.org)!) / 1000] : []))),
    maxConcurrentRuns,
    runsFinishedAt: finished.length ? round(s(Math.max(...finished))) : null,
  };
}

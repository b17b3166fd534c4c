/**
 * The SCIM benches' platform requests three ways (bench/arrivals-per-key.ts): by the
 * simulator's stamp, by the kernel's capture time on loopback and by the Redis grant log of
 * the worker's one budget. Started right after the simulator's request log is reset, stopped
 * once the platform work is done (bench/scim.ts, bench/scim-steady.ts).
 *
 * Why: the simulator stamps a request when its event loop handles it, late on a loaded
 * machine (docs/benchmarks.md, the orgs bench); the capture is what the platform received.
 */
import { z } from 'zod';
import { budgetIdentity } from '../src/platform/client.ts';
import { budgetKeys } from '../src/platform/request-budget.ts';
import { startArrivalCapture, type ArrivalCapture } from './arrivals-capture.ts';
import { comparePerKey, describeComparison, watchGrants, type Arrival, type PerKeyComparison } from './arrivals-per-key.ts';

/** 'auto': capture when tcpdump or dumpcap can start; 'on': fail when it cannot. */
export type CaptureMode = 'auto' | 'on' | 'off';

const recordsSchema = z.array(z.object({ at: z.number(), route: z.string(), query: z.string().default('') }));
export type SimulatorRecord = z.infer<typeof recordsSchema>[number];

export interface ScimArrivals {
  /** The simulator's request log (epoch ms stamps), in its order. */
  records: SimulatorRecord[];
  perKey: PerKeyComparison;
  /**
   * Most platform requests in any sliding second by the record that judged it: the capture
   * when it holds every request the simulator logged, else the simulator's stamp.
   */
  maxInAnySecond: number;
  judgedBy: 'capture' | 'simulator stamp';
  /** Why the capture did not judge, when it did not. */
  captureUnavailable?: string;
  /** The comparison as one line for stderr. */
  line: string;
}

export interface ScimArrivalsWatch {
  stop(): Promise<ScimArrivals>;
  /** For a run that failed: neither tcpdump nor the Redis poller may outlive it (a no-op after stop). */
  abort(): Promise<void>;
}

export async function watchScimArrivals(sim: { url: string; apiKey: string }, prefix: string, budget: number, mode: CaptureMode = 'auto'): Promise<ScimArrivalsWatch> {
  const grants = watchGrants('redis://127.0.0.1:6379', new Map([[budgetKeys(prefix, budgetIdentity(new URL(sim.url).origin, sim.apiKey)).log, 'key']]));
  let capture: ArrivalCapture | undefined;
  let unavailable: string | undefined = 'capture off';
  if (mode !== 'off') {
    const started = await startArrivalCapture(Number(new URL(sim.url).port));
    if ('unavailable' in started) {
      if (mode === 'on') {
        await grants.stop();
        throw new Error(`capture: ${started.unavailable}`);
      }
      unavailable = started.unavailable;
    } else {
      capture = started;
      unavailable = undefined;
    }
  }
  let grantsStopped: ReturnType<typeof grants.stop> | undefined;
  const stopGrants = (): ReturnType<typeof grants.stop> => (grantsStopped ??= grants.stop());
  return {
    async abort() {
      await capture?.stop().catch(() => undefined);
      await stopGrants();
    },
    async stop() {
      // The simulator's log first, then the capture and the grants: every request it logged was
      // sent before this read, so a complete capture holds it (the worker may still send some).
      const records = recordsSchema.parse(await (await fetch(`${sim.url}/__simulator/requests/arrivals`)).json());
      const captured = capture ? await capture.stop() : undefined;
      const granted = await stopGrants();
      const asArrival = (a: SimulatorRecord): Arrival => {
        const space = a.route.indexOf(' ');
        return { key: 'key', at: a.at, method: a.route.slice(0, space), target: a.query === '' ? a.route.slice(space + 1) : `${a.route.slice(space + 1)}?${a.query}` };
      };
      const perKey = comparePerKey({
        budget,
        simulator: records.map(asArrival),
        grants: granted,
        ...(captured ? { captured: captured.requests.filter((r) => r.authorization === `Bearer ${sim.apiKey}`).map((r) => ({ key: 'key', at: r.at, method: r.method, target: r.target, firstOnConnection: r.firstOnConnection })) } : {}),
      });
      // The capture judges only when no request the simulator logged is missing from it.
      let why = unavailable;
      if (perKey.capture && perKey.capture.unmatchedSimulator > 0) why = `the capture misses ${perKey.capture.unmatchedSimulator} of the ${records.length} requests the simulator logged`;
      const judgedBy = perKey.capture && why === undefined ? 'capture' : 'simulator stamp';
      const lossNote = captured && (captured.streamGaps > 0 || (captured.dropped ?? 0) > 0) ? `; capture: ${captured.streamGaps} stream gaps, ${captured.dropped} packets dropped by the kernel` : '';
      return {
        records,
        perKey,
        maxInAnySecond: judgedBy === 'capture' ? perKey.capture!.maxPerKey : perKey.simulator.maxPerKey,
        judgedBy,
        ...(why === undefined ? {} : { captureUnavailable: why }),
        line: `${describeComparison(perKey)}${lossNote}${why === undefined ? '' : ` (no capture verdict: ${why})`}`,
      };
    },
  };
}

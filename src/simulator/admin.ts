import { z } from 'zod';
import { faultsPatchSchema, type SimulatorFaults } from './faults.ts';
import type { Overlap, SimOrganisation } from './organisations.ts';
import type { Reply } from './reply.ts';
import { invalidModel, json } from './reply.ts';
import { requestsByOrganisation, summariseRequests, type KeyArrivals, type RequestRecord } from './request-log.ts';
import type { ResultChanges } from './runtime.ts';
import { allResults, updateResult } from './state.ts';
import { handleWebhookAdmin } from './webhooks.ts';

/**
 * `/__simulator/*`: faults, traffic, data summaries and webhooks, without a key (for
 * tests and benches in another process). Calls about one organisation's data take
 * `?org=<name or GUID>`; without it they mean the first organisation, so a
 * single-organisation caller never needs it.
 */

export interface AdminContext {
  organisations: readonly SimOrganisation[];
  overlap: Overlap | undefined;
  requests: RequestRecord[];
  /** Every authorised request's arrival per key, untrimmed: the per-key budget check of a long run. */
  keyArrivals: KeyArrivals;
  faults(): Readonly<SimulatorFaults>;
  setFaults(f: Partial<SimulatorFaults>): void;
  /** The results the arrival and removal faults added and deleted in an organisation since the faults were last set. */
  resultChanges(org: SimOrganisation): Readonly<ResultChanges>;
}

/** The organisation `?org=` names (its name or GUID, case-insensitive); the first when absent. */
export function selectOrganisation(organisations: readonly SimOrganisation[], ref: string | null): SimOrganisation | undefined {
  if (ref === null || ref === '') return organisations[0];
  const key = ref.trim().toLowerCase();
  return organisations.find((o) => o.id === key || o.name.toLowerCase() === key);
}

function parseJson(raw: Buffer | undefined): { ok: true; value: unknown } | { ok: false; reply: Reply } {
  try {
    return { ok: true, value: JSON.parse(raw?.toString('utf8') || '{}') };
  } catch {
    return { ok: false, reply: invalidModel([{ field: 'body', message: 'not valid JSON' }]) };
  }
}

function stateSummary(org: SimOrganisation): Record<string, unknown> {
  const { state } = org;
  return {
    organisationId: state.organisationId,
    name: org.name,
    courses: state.courses.length,
    filters: state.filters.length,
    users: state.users.length,
    groups: state.groups.length,
    results: state.results.length,
    undatedResults: state.undatedResults.length,
    seatsInUse: state.users.filter((u) => u.hasAccess).length,
    totalSeats: state.seats.totalSeats,
    version: state.version,
  };
}

const windowSchema = z.object({ windowMs: z.coerce.number().int().min(1).max(3_600_000).default(1000) });
const perKeySchema = windowSchema.extend({ limit: z.coerce.number().int().min(1).optional() });

export async function handleAdmin(ctx: AdminContext, method: string, path: string, query: URLSearchParams, body: () => Promise<Buffer | undefined>): Promise<Reply> {
  const orgRef = query.get('org');
  const org = selectOrganisation(ctx.organisations, orgRef);
  const noSuchOrg = (): Reply => json({ code: 'NO_SUCH_ORGANISATION', message: `no organisation named ${orgRef}` }, 404);

  if (path.startsWith('/__simulator/webhooks/')) {
    if (!org) return noSuchOrg();
    return handleWebhookAdmin(org.webhooks, method, path, query, await body());
  }
  if (method === 'POST' && path === '/__simulator/faults') {
    const parsed = parseJson(await body());
    if (!parsed.ok) return parsed.reply;
    const patch = faultsPatchSchema.safeParse(parsed.value);
    if (!patch.success) return invalidModel(patch.error.issues.map((i) => ({ field: i.path.join('.') || 'body', message: i.message })));
    const clean: Partial<SimulatorFaults> = {};
    for (const [k, v] of Object.entries(patch.data)) if (v !== undefined) Object.assign(clean, { [k]: v });
    ctx.setFaults(clean);
    return json(ctx.faults());
  }
  if (method === 'GET' && path === '/__simulator/faults') return json(ctx.faults());
  if (method === 'GET' && path === '/__simulator/requests/summary') return json(summariseRequests(ctx.requests));
  // The query and key's organisation let a bench match each stamp to the same request captured elsewhere.
  if (method === 'GET' && path === '/__simulator/requests/arrivals') return json(ctx.requests.map((r) => ({ at: r.at, route: r.route, query: r.query, organisationId: r.organisationId })));
  if (method === 'GET' && path === '/__simulator/requests/organisations') {
    // Per key: the bench's "no key over its budget in any second".
    const q = windowSchema.safeParse(Object.fromEntries(query));
    if (!q.success) return invalidModel([{ field: 'windowMs', message: 'a whole number of ms from 1' }]);
    const byOrg = requestsByOrganisation(ctx.requests, q.data.windowMs);
    return json({
      windowMs: q.data.windowMs,
      organisations: ctx.organisations.map((o) => ({
        id: o.id,
        name: o.name,
        ...(byOrg[o.id] ?? { total: 0, maxInAnyWindow: 0, maxInAnyClockSecond: 0, perSecond: {}, firstAt: null, lastAt: null }),
      })),
    });
  }
  if (method === 'GET' && path === '/__simulator/requests/per-key') {
    // Every request since the last reset, whatever the request log has dropped: "no key over its budget in any second".
    const q = perKeySchema.safeParse(Object.fromEntries(query));
    if (!q.success) return invalidModel(q.error.issues.map((i) => ({ field: i.path.join('.') || 'query', message: i.message })));
    const { windowMs, limit } = q.data;
    return json({
      windowMs,
      limit: limit ?? null,
      organisations: ctx.organisations.map((o) => ({ id: o.id, name: o.name, ...ctx.keyArrivals.figures(o.id, windowMs, limit) })),
    });
  }
  if (method === 'POST' && path === '/__simulator/requests/reset') {
    ctx.requests.length = 0;
    ctx.keyArrivals.clear();
    return { status: 204 };
  }
  if (method === 'GET' && path === '/__simulator/organisations') {
    return json({ organisations: ctx.organisations.map(stateSummary), overlap: ctx.overlap ?? null });
  }
  if (method === 'POST' && path === '/__simulator/results/mutate') {
    if (!org) return noSuchOrg();
    // For benchmarks in another process: change the score of every Nth result.
    const parsed = parseJson(await body());
    if (!parsed.ok) return parsed.reply;
    const request = z.object({ fraction: z.number().min(0).max(1) }).safeParse(parsed.value);
    if (!request.success) return invalidModel([{ field: 'fraction', message: 'a number from 0 to 1' }]);
    const every = request.data.fraction > 0 ? Math.max(1, Math.round(1 / request.data.fraction)) : 0;
    let changed = 0;
    if (every > 0) {
      for (const result of allResults(org.state).filter((_, index) => index % every === 0)) {
        updateResult(org.state, result.id, { score: (result.score ?? 0) + 1 });
        changed += 1;
      }
    }
    return json({ changed });
  }
  if (method === 'GET' && path === '/__simulator/results/changes') {
    // Which results were there before a run and still are after it: the ids listed at its start, less `removed`.
    if (!org) return noSuchOrg();
    const changes = ctx.resultChanges(org);
    return json({ added: changes.added, removed: changes.removed });
  }
  if (method === 'GET' && path === '/__simulator/state/summary') {
    if (!org) return noSuchOrg();
    return json(stateSummary(org));
  }
  return { status: 404 };
}

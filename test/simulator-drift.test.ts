import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { queryResults, startSimulator, type ResultsQuery, type RunningSimulator } from '../src/simulator/index.ts';
import { fetchResultChanges, listedResultIds } from './helpers/missing-results.ts';

/**
 * The simulator's data faults while a query pages: where arrivals land (`arrivalsAt`),
 * which result a removal takes (`removeAt`), and the record of both
 * (`GET /__simulator/results/changes`) that the completeness tests and the drift bench
 * judge a run by.
 */

interface Page {
  totalEntities: number;
  entities: Array<{ id: string; dateCompleted: string | null }>;
  links: Array<{ type: string }>;
}

/** Reads a query's pages one after another to the end, as a reader without read-ahead does. */
async function walk(sim: RunningSimulator, query: Record<string, string>): Promise<Page[]> {
  const pages: Page[] = [];
  for (let page = 1; ; page++) {
    const params = new URLSearchParams({ ...query, page: String(page) });
    const response = await fetch(`${sim.url}/api/v2/results?${params.toString()}`, { headers: { authorization: `Bearer ${sim.apiKey}` } });
    expect(response.status).toBe(200);
    const body = (await response.json()) as Page;
    pages.push(body);
    if (!body.links.some((l) => l.type === 'Next Page')) return pages;
  }
}

const ids = (sim: RunningSimulator, query: ResultsQuery): string[] => queryResults(sim.state, query).map((r) => r.id);

const WINDOW = { startDate: '2024-03-01', endDate: '2024-05-01' };

describe('simulator: where arrivals land and which results removals take', () => {
  let sim: RunningSimulator;
  beforeAll(async () => {
    sim = await startSimulator({ seed: 11, sizes: { results: 3_000 } });
  });
  afterEach(() => {
    sim.setFaults({ driftEvery: 0, driftCount: 1, arrivalsAt: 'tail', removeEvery: 0, removeLimit: 0, removeAt: 'served' });
  });
  afterAll(async () => {
    await sim.close();
  });

  for (const query of [WINDOW, {}] as const) {
    const label = 'startDate' in query ? 'a dated window' : 'the undated query';

    it(`head: each arrival is listed first by ${label}, dated within its range`, async () => {
      const before = ids(sim, query);
      sim.setFaults({ driftEvery: 2, arrivalsAt: 'head' });
      const pages = await walk(sim, query);
      const { added } = sim.resultChanges();
      expect(added.length).toBe(Math.floor(pages.length / 2));
      const after = ids(sim, query);
      // The newest arrival first, each before the one before it, then the list as it was.
      expect(after.slice(0, added.length)).toEqual([...added].reverse());
      expect(after.slice(added.length)).toEqual(before);
      for (const id of added) expect(sim.state.resultsById.get(id)?.dateCompleted).not.toBeNull();
    });

    it(`middle: each arrival is a completion dated 1–4 days before the newest result of ${label}`, async () => {
      const before = queryResults(sim.state, query);
      const newestBefore = Date.parse(before.filter((r) => r.dateCompleted !== null).at(-1)!.dateCompleted!);
      sim.setFaults({ driftEvery: 1, driftCount: 2, arrivalsAt: 'middle' });
      await walk(sim, query);
      const { added } = sim.resultChanges();
      expect(added.length).toBeGreaterThan(4);
      const after = ids(sim, query);
      const dated = queryResults(sim.state, query).filter((r) => r.dateCompleted !== null).length;
      for (const id of added) {
        const at = Date.parse(sim.state.resultsById.get(id)!.dateCompleted!);
        expect(newestBefore - at).toBeGreaterThanOrEqual(86_400_000);
        expect(newestBefore - at).toBeLessThanOrEqual(4 * 86_400_000);
        // Neither end of the listing: some dated results are listed after it.
        const position = after.indexOf(id);
        expect(position).toBeGreaterThan(0);
        expect(position).toBeLessThan(dated - 5);
      }
    });
  }

  it('tail: a window that ends before the newest result gets its arrivals at its own newest end, inside its range', async () => {
    const early = { startDate: '2024-02-01', endDate: '2024-03-01' };
    sim.setFaults({ driftEvery: 1, arrivalsAt: 'tail' });
    await walk(sim, early);
    const { added } = sim.resultChanges();
    expect(added.length).toBeGreaterThan(2);
    const after = ids(sim, early);
    expect(after.slice(-added.length)).toEqual(added);
    for (const id of added) expect(sim.state.resultsById.get(id)!.dateCompleted! < '2024-03-01').toBe(true);
  });

  it('tail: the undated query gets just-started results listed last (as before)', async () => {
    sim.setFaults({ driftEvery: 3, arrivalsAt: 'tail' });
    await walk(sim, {});
    const { added } = sim.resultChanges();
    expect(added.length).toBeGreaterThan(0);
    expect(ids(sim, {}).slice(-added.length)).toEqual(added);
    for (const id of added) expect(sim.state.resultsById.get(id)!.dateCompleted).toBeNull();
  });

  it('random: arrivals land at the head, in the middle and at the tail', async () => {
    const before = ids(sim, WINDOW);
    sim.setFaults({ driftEvery: 1, driftCount: 3, arrivalsAt: 'random' });
    await walk(sim, WINDOW);
    const { added } = sim.resultChanges();
    const after = ids(sim, WINDOW);
    const firstOld = after.indexOf(before[0]!);
    const lastOld = after.indexOf(before.at(-1)!);
    const head = added.filter((id) => after.indexOf(id) < firstOld);
    const tail = added.filter((id) => after.indexOf(id) > lastOld);
    expect(head.length).toBeGreaterThan(0);
    expect(tail.length).toBeGreaterThan(0);
    expect(added.length - head.length - tail.length).toBeGreaterThan(0);
  });

  it('arrivals match the reporting filter of the query that pages', async () => {
    const answer = sim.state.filters[0]!.answers[0]!.id;
    const query = { reportingFilters: [answer] };
    sim.setFaults({ driftEvery: 1, arrivalsAt: 'head' });
    await walk(sim, { 'reportingFilters[]': answer });
    const { added } = sim.resultChanges();
    expect(added.length).toBeGreaterThan(0);
    expect(ids(sim, query).slice(0, added.length)).toEqual([...added].reverse());
  });

  it('removeAt anywhere: removals take results ahead of the reader as well as behind it; served takes only results behind', async () => {
    const ahead = async (removeAt: 'served' | 'anywhere'): Promise<{ behind: number; ahead: number }> => {
      const before = ids(sim, WINDOW);
      sim.setFaults({ removeEvery: 1, removeAt });
      const pages = await walk(sim, WINDOW);
      const { removed, added } = sim.resultChanges();
      expect(added).toEqual([]);
      expect(removed.length).toBe(pages.length);
      sim.setFaults({ removeEvery: 0 });
      // The i-th removal (from 0) came after page i + 1 was served: behind the reader when
      // within the first (i + 1) × 50 of the listing as it was then.
      const listing = [...before];
      let behind = 0;
      removed.forEach((id, i) => {
        const position = listing.indexOf(id);
        expect(position).toBeGreaterThanOrEqual(0);
        if (position < (i + 1) * 50) behind++;
        listing.splice(position, 1);
      });
      return { behind, ahead: removed.length - behind };
    };
    const served = await ahead('served');
    expect(served.ahead).toBe(0);
    const anywhere = await ahead('anywhere');
    expect(anywhere.ahead).toBeGreaterThan(0);
    expect(anywhere.behind).toBeGreaterThan(0);
  });

  it('GET /__simulator/results/changes: the ids listed before, less removed, plus added, are the ids listed after; setting faults starts a new record', async () => {
    const before = await listedResultIds(sim.url, sim.apiKey, WINDOW);
    sim.setFaults({ driftEvery: 2, arrivalsAt: 'random', removeEvery: 3, removeAt: 'anywhere' });
    await walk(sim, WINDOW);
    const changes = await fetchResultChanges(sim.url);
    expect(changes).toEqual(sim.resultChanges());
    expect(changes.added.length).toBeGreaterThan(0);
    expect(changes.removed.length).toBeGreaterThan(0);
    sim.setFaults({ driftEvery: 0, removeEvery: 0 });
    const after = await listedResultIds(sim.url, sim.apiKey, WINDOW);
    const removed = new Set(changes.removed);
    const expected = new Set([...[...before].filter((id) => !removed.has(id)), ...changes.added.filter((id) => !removed.has(id))]);
    expect([...after].sort()).toEqual([...expected].sort());
    expect(await fetchResultChanges(sim.url)).toEqual({ added: [], removed: [] });
  });

  it('the admin endpoint takes arrivalsAt and removeAt, and refuses a place it does not know', async () => {
    const ok = await fetch(`${sim.url}/__simulator/faults`, { method: 'POST', body: JSON.stringify({ arrivalsAt: 'middle', removeAt: 'anywhere' }) });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toMatchObject({ arrivalsAt: 'middle', removeAt: 'anywhere' });
    const bad = await fetch(`${sim.url}/__simulator/faults`, { method: 'POST', body: JSON.stringify({ arrivalsAt: 'sideways' }) });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain('arrivalsAt');
    const noOrg = await fetch(`${sim.url}/__simulator/results/changes?org=nobody`);
    expect(noOrg.status).toBe(404);
  });
});

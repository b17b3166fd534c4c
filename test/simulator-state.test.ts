import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { Command } from 'commander';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerSimulatorCommand } from '../src/commands/simulator.ts';
import { loadConfig } from '../src/config.ts';
import {
  addCourse,
  addResult,
  DEMO_API_KEY,
  markChanged,
  queryResults,
  removeCourse,
  removeResult,
  startSimulator,
  updateResult,
  type ApiResult,
  type RunningSimulator,
} from '../src/simulator/index.ts';

async function getJson<T>(sim: RunningSimulator, path: string): Promise<T> {
  const res = await fetch(`${sim.url}${path}`, { headers: { authorization: `Bearer ${sim.apiKey}` } });
  expect(res.status).toBe(200);
  return (await res.json()) as T;
}

interface ResultsPage {
  entities: ApiResult[];
  totalEntities: number;
}

describe('simulator state helpers', () => {
  let sim: RunningSimulator;
  beforeAll(async () => {
    sim = await startSimulator({ seed: 21, sizes: { results: 400, courses: 10 } });
  });
  afterAll(async () => {
    await sim.close();
  });

  it('updateResult changes what pages serve and moves a result whose date changed', async () => {
    const target = sim.state.results[0]!;
    const q = '/api/v2/results?startDate=2024-12-30&endDate=2025-01-01';
    const before = await getJson<ResultsPage>(sim, q);
    expect(before.entities.map((r) => r.id)).not.toContain(target.id);
    updateResult(sim.state, target.id, { dateCompleted: '2024-12-31T08:00:00.000Z', score: 1 });
    const after = await getJson<ResultsPage>(sim, q);
    expect(after.totalEntities).toBe(before.totalEntities + 1);
    expect(after.entities.find((r) => r.id === target.id)).toMatchObject({ score: 1, dateCompleted: '2024-12-31T08:00:00.000Z' });
    expect(sim.state.results[sim.state.results.length - 1]!.dateCompleted! >= '2024-12-31T08:00:00.000Z').toBe(true);
    const byId = await getJson<ApiResult>(sim, `/api/v2/results/${target.id}`);
    expect(byId.score).toBe(1);
    // Marking a completed result incomplete moves it to the undated list.
    updateResult(sim.state, target.id, { dateCompleted: null, isComplete: false });
    expect(sim.state.undatedResults.some((r) => r.id === target.id)).toBe(true);
    expect(queryResults(sim.state, { startDate: '2024-12-30' }).some((r) => r.id === target.id)).toBe(false);
  });

  it('addResult and removeResult change totals; removeCourse and addCourse change GET courses', async () => {
    const total = (await getJson<ResultsPage>(sim, '/api/v2/results?startDate=2024-01-01')).totalEntities;
    const added = addResult(sim.state, { dateCompleted: '2024-07-07T07:07:07.007Z', certificateUrl: 'https://x.example/c.pdf' });
    expect((await getJson<ResultsPage>(sim, '/api/v2/results?startDate=2024-01-01')).totalEntities).toBe(total + 1);
    expect(removeResult(sim.state, added.id)).toBe(true);
    expect(removeResult(sim.state, added.id)).toBe(false);
    expect((await getJson<ResultsPage>(sim, '/api/v2/results?startDate=2024-01-01')).totalEntities).toBe(total);

    const gone = sim.state.courses[3]!;
    expect(removeCourse(sim.state, gone.id)).toBe(true);
    const course = addCourse(sim.state, { name: 'Brand New Course', passRate: null });
    const courses = await getJson<{ entities: Array<{ id: string; name: string }> }>(sim, '/api/v2/courses');
    expect(courses.entities.map((c) => c.id)).not.toContain(gone.id);
    expect(courses.entities.find((c) => c.id === course.id)?.name).toBe('Brand New Course');
  });

  it('markChanged serves direct edits of result objects', async () => {
    const r = sim.state.results[10]!;
    await getJson<ApiResult>(sim, `/api/v2/results/${r.id}`);
    r.score = 77;
    r.maximumScore = 77;
    markChanged(sim.state);
    expect(await getJson<ApiResult>(sim, `/api/v2/results/${r.id}`)).toMatchObject({ score: 77, maximumScore: 77 });
  });

  it('keeps new ids deterministic: the same calls on the same seed give the same ids', async () => {
    const a = await startSimulator({ seed: 99, sizes: { results: 20 } });
    const b = await startSimulator({ seed: 99, sizes: { results: 20 } });
    try {
      for (const s of [a, b]) {
        const res = await fetch(`${s.url}/api/v2/users`, {
          method: 'POST',
          headers: { authorization: `Bearer ${s.apiKey}`, 'content-type': 'application/json' },
          body: JSON.stringify({ email: 'same@acme-training.example', firstName: 'S', lastName: 'Ame', role: 'USER' }),
        });
        expect(res.status).toBe(204);
      }
      expect(a.state.users.at(-1)!.id).toBe(b.state.users.at(-1)!.id);
      expect(addResult(a.state).id).toBe(addResult(b.state).id);
    } finally {
      await a.close();
      await b.close();
    }
  });
});

describe('trainsync simulator command', () => {
  it('serves with the configured key, prints URL and key, and stops when told', async () => {
    let printed = '';
    let stop!: () => void;
    const stopped = new Promise<void>((resolve) => {
      stop = resolve;
    });
    const program = new Command('trainsync').exitOverride();
    registerSimulatorCommand(program, {
      loadConfig: () => loadConfig({ TRAINSYNC_API_KEY: 'key-from-env' }),
      write: (text) => {
        printed += text;
      },
      stopped: () => stopped,
    });
    const run = program.parseAsync(['simulator', '--results', '120', '--users', '30', '--seed', '4', '--rate-limit-every', '2'], { from: 'user' });
    await expect.poll(() => printed, { timeout: 10_000 }).toContain('TRAINSYNC_API_KEY=');
    const url = /TRAINSYNC_API_URL=(\S+)/.exec(printed)![1]!;
    expect(printed).toContain('TRAINSYNC_API_KEY=key-from-env');
    expect(printed).toContain('30 users, 120 results');
    const get = (key: string): Promise<Response> => fetch(`${url}/api/v2/filters`, { headers: { authorization: `Bearer ${key}` } });
    expect((await get(DEMO_API_KEY)).status).toBe(401);
    expect((await get('key-from-env')).status).toBe(200);
    expect((await get('key-from-env')).status).toBe(429);
    stop();
    await run;
    await expect(fetch(`${url}/api/v2/filters`)).rejects.toThrow();
  });

  it('falls back to the demo key and rejects a bad number with a helpful message', async () => {
    let printed = '';
    let errors = '';
    const program = new Command('trainsync').exitOverride().configureOutput({ writeErr: (t) => (errors += t), writeOut: () => undefined });
    registerSimulatorCommand(program, { loadConfig: () => loadConfig({}), write: (t) => (printed += t), stopped: () => Promise.resolve() });
    await program.parseAsync(['simulator', '--results', '10'], { from: 'user' });
    expect(printed).toContain(`TRAINSYNC_API_KEY=${DEMO_API_KEY}`);
    await expect(program.parseAsync(['simulator', '--port', 'abc'], { from: 'user' })).rejects.toThrow();
    expect(errors).toContain('expected a whole number');
  });
});

describe('simulator child process', () => {
  it('serves from a process of its own and stops when its parent closes stdin', { timeout: 30_000 }, async () => {
    const child = spawn(process.execPath, ['bin/run-ts.js', 'src/simulator/child.ts', JSON.stringify({ seed: 8, apiKey: 'child-key', sizes: { results: 50 } })], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    try {
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      const line = await new Promise<string>((resolve) => createInterface({ input: child.stdout! }).once('line', resolve));
      const info = JSON.parse(line) as { url: string; apiKey: string };
      expect(info.apiKey).toBe('child-key');
      const res = await fetch(`${info.url}/__simulator/state/summary`);
      expect(((await res.json()) as { results: number; undatedResults: number }).results).toBeGreaterThan(30);
      child.stdin!.end();
      expect(await exited).toBe(0);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });
});

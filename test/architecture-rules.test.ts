import { describe, expect, it } from 'vitest';
import { cruiseWithRules, CRUISED, describeViolation, ROOT } from './helpers/depcruise.ts';

describe('the architecture rules (.dependency-cruiser.mjs, docs/architecture.md "The rules")', () => {
  it('hold over src/, jobs/, test/ and bench/: arrows point down, wings meet through their entry files, no import cycle', async () => {
    const result = await cruiseWithRules(ROOT, CRUISED);
    // Not vacuous: the sources, tests and benchmarks were read and their imports resolved.
    expect(result.summary.totalCruised).toBeGreaterThan(500);
    const cli = result.modules.find((module) => module.source === 'src/cli.ts');
    expect(cli?.dependencies.map((dependency) => dependency.resolved)).toContain('jobs/index.ts');
    for (const folder of CRUISED) expect(result.modules.some((module) => module.source.startsWith(`${folder}/`)), folder).toBe(true);
    expect(result.summary.violations.map(describeViolation)).toEqual([]);
  });
});

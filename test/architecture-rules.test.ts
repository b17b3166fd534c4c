import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { cruise, type ICruiseResult, type IViolation } from 'dependency-cruiser';
import extractDepcruiseOptions from 'dependency-cruiser/config-utl/extract-depcruise-options';
import extractTSConfig from 'dependency-cruiser/config-utl/extract-ts-config';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** A violation as one line, as `npx depcruise src jobs` would name it. */
function describeViolation(violation: IViolation): string {
  const cycle = violation.cycle?.map((step) => step.name).join(' → ');
  return `${violation.rule.name}: ${violation.from} → ${cycle ?? violation.to}`;
}

describe('the architecture rules (.dependency-cruiser.mjs, docs/architecture.md "The rules")', () => {
  it('hold over src/ and jobs/: arrows point down, and no import cycle', async () => {
    const options = await extractDepcruiseOptions(path.join(ROOT, '.dependency-cruiser.mjs'));
    const reported = await cruise(['src', 'jobs'], { ...options, baseDir: ROOT }, undefined, { tsConfig: extractTSConfig(path.join(ROOT, 'tsconfig.json')) });
    const result = reported.output as ICruiseResult;
    // Not vacuous: the sources were read and their imports resolved (the CLI imports the catalog's list).
    expect(result.summary.totalCruised).toBeGreaterThan(200);
    const cli = result.modules.find((module) => module.source === 'src/cli.ts');
    expect(cli?.dependencies.map((dependency) => dependency.resolved)).toContain('jobs/index.ts');
    expect(result.summary.violations.map(describeViolation)).toEqual([]);
  });
});

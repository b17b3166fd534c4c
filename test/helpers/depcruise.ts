import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { cruise, type ICruiseResult, type IViolation } from 'dependency-cruiser';
import extractDepcruiseOptions from 'dependency-cruiser/config-utl/extract-depcruise-options';
import extractTSConfig from 'dependency-cruiser/config-utl/extract-ts-config';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** Every folder the rules cover. */
export const CRUISED = ['src', 'jobs', 'test', 'bench'];

/** A violation as one line, as `npx depcruise src jobs test bench` would name it. */
export function describeViolation(violation: IViolation): string {
  const cycle = violation.cycle?.map((step) => step.name).join(' → ');
  return `${violation.rule.name}: ${violation.from} → ${cycle ?? violation.to}`;
}

/** The rule names of .dependency-cruiser.mjs, in its order. */
export async function ruleNames(): Promise<string[]> {
  const options = await extractDepcruiseOptions(path.join(ROOT, '.dependency-cruiser.mjs'));
  return (options.ruleSet?.forbidden ?? []).map((rule) => rule.name ?? '(unnamed)');
}

/** Cruises `dirs` of the tree at `root` with the repository's rules (root's own package.json and tsconfig.json). */
export async function cruiseWithRules(root: string, dirs: readonly string[]): Promise<ICruiseResult> {
  const options = await extractDepcruiseOptions(path.join(ROOT, '.dependency-cruiser.mjs'));
  const reported = await cruise([...dirs], { ...options, baseDir: root }, undefined, { tsConfig: extractTSConfig(path.join(root, 'tsconfig.json')) });
  return reported.output as ICruiseResult;
}

import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { z } from 'zod';
import { parsePage } from './helpers/doc-links.ts';

/**
 * The shipped rules (deploy/prometheus/trainsync.rules.yml) against Prometheus' own tool:
 * `promtool check rules` (syntax, templates) and `promtool test rules` on
 * test/prometheus/trainsync.rules.test.yml, whose cases say for every alert which series make
 * it fire, with its labels and annotations, and which near misses must not. Around them, what
 * promtool does not check: every alert has a severity, a summary, a description naming the
 * organisation and the resource, a runbook section in docs/operator.md, and unit tests that
 * both fire it and keep it quiet. promtool is Debian's `prometheus` package (npm test's pretest).
 */

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const RULES = path.join(ROOT, 'deploy/prometheus/trainsync.rules.yml');
const UNIT_TESTS = path.join(ROOT, 'test/prometheus/trainsync.rules.test.yml');
const run = promisify(execFile);

const ruleSchema = z.object({
  alert: z.string().optional(),
  record: z.string().optional(),
  expr: z.string(),
  for: z.string().optional(),
  labels: z.record(z.string(), z.string()).optional(),
  annotations: z.record(z.string(), z.string()).optional(),
});
const rulesSchema = z.object({ groups: z.array(z.object({ name: z.string(), rules: z.array(ruleSchema) })) });
const unitTestsSchema = z.object({
  rule_files: z.array(z.string()),
  tests: z.array(
    z.object({
      alert_rule_test: z.array(z.object({ eval_time: z.string(), alertname: z.string(), exp_alerts: z.array(z.unknown()).nullable().optional() })).default([]),
    }),
  ),
});

const alerts = rulesSchema.parse(parse(readFileSync(RULES, 'utf8'))).groups.flatMap((group) => group.rules.filter((rule) => rule.alert !== undefined));

describe('the shipped Prometheus rules', () => {
  it('pass promtool check rules', async () => {
    const { stdout } = await run('promtool', ['check', 'rules', RULES]);
    expect(stdout).toMatch(/SUCCESS: \d+ rules found/);
  });

  it('pass their promtool unit tests: every alert fires on its series, with its labels and annotations, and not on the near misses', async () => {
    // From the test file's folder: its rule_files are relative to it.
    const { stdout } = await run('promtool', ['test', 'rules', path.basename(UNIT_TESTS)], { cwd: path.dirname(UNIT_TESTS) }).catch((error: { stdout?: string; stderr?: string }) => {
      throw new Error(`promtool test rules failed:\n${error.stdout ?? ''}${error.stderr ?? ''}`);
    });
    expect(stdout).toMatch(/SUCCESS/);
  });

  it('unit-test every alert both ways: at least one case where it fires and one where it must not', () => {
    const unit = unitTestsSchema.parse(parse(readFileSync(UNIT_TESTS, 'utf8')));
    expect(unit.rule_files.map((file) => path.resolve(path.dirname(UNIT_TESTS), file))).toEqual([RULES]);
    const cases = unit.tests.flatMap((test) => test.alert_rule_test);
    for (const { alert } of alerts) {
      const mine = cases.filter((c) => c.alertname === alert);
      expect(mine.some((c) => (c.exp_alerts ?? []).length > 0), `${alert}: a case where it fires`).toBe(true);
      expect(mine.some((c) => (c.exp_alerts ?? []).length === 0), `${alert}: a case where it must not fire`).toBe(true);
    }
    // No case for an alert that does not exist (a renamed one would pass silently otherwise).
    expect([...new Set(cases.map((c) => c.alertname))].sort()).toEqual(alerts.map((a) => a.alert).sort());
  });

  it('give every alert a severity, a summary, a description naming the organisation and resource, and a runbook section in docs/operator.md', () => {
    const anchors = parsePage(readFileSync(path.join(ROOT, 'docs/operator.md'), 'utf8')).anchors;
    expect(alerts.length).toBeGreaterThanOrEqual(13);
    for (const rule of alerts) {
      const name = rule.alert!;
      expect(['critical', 'warning', 'info'], name).toContain(rule.labels?.severity);
      const { summary, description, runbook_url: runbook } = rule.annotations ?? {};
      expect(summary, name).toMatch(/\S/);
      // The organisation by its label where the expression keeps one, else "every organisation"; the same for the resource.
      expect(description, name).toMatch(/organisation \{\{ \$labels\.org \}\}|every organisation|any organisation/i);
      expect(description, name).toMatch(/\{\{ \$labels\.resource \}\}|resource/);
      if (/by \(org, resource\)|trainsync:sync_/.test(rule.expr)) expect(description, name).toContain('{{ $labels.resource }}');
      expect(runbook, name).toMatch(/^docs\/operator\.md#[a-z0-9-]+$/);
      const anchor = runbook!.split('#')[1]!;
      expect(anchors.has(anchor), `${name}: docs/operator.md has no section #${anchor}`).toBe(true);
    }
  });
});

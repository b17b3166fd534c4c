import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parser } from '@prometheus-io/lezer-promql';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createMetrics } from '../src/runtime/metrics.ts';

/**
 * deploy/grafana/trainsync.json against the metrics the worker exports: every query (panels
 * and template variables) is parsed with Prometheus' own PromQL grammar, and every metric it
 * selects must be one the worker's registry holds, every label it matches, groups by or
 * shows in a legend one that metric carries. The registry is the worker's, built in-process
 * with every metric it registers (state gauges included); a histogram exports _bucket (with
 * `le`), _sum and _count. Prometheus adds `instance` and `job` to every series it scrapes.
 */

type SyntaxNode = ReturnType<typeof parser.parse>['topNode'];
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SCRAPE_LABELS = ['instance', 'job'];

const targetSchema = z.object({ expr: z.string(), legendFormat: z.string().optional() });
const panelSchema = z.looseObject({ type: z.string(), title: z.string(), targets: z.array(targetSchema).optional() });
const dashboardSchema = z.looseObject({
  uid: z.string(),
  title: z.string(),
  panels: z.array(panelSchema),
  templating: z.object({ list: z.array(z.looseObject({ name: z.string(), type: z.string(), query: z.unknown().optional() })) }),
});
const dashboard = dashboardSchema.parse(JSON.parse(readFileSync(path.join(ROOT, 'deploy/grafana/trainsync.json'), 'utf8')));

/** Every series name the worker exports, with its labels. */
function exported(): Map<string, Set<string>> {
  const metrics = createMetrics(async () => [], { orgs: ['north'], readState: async () => ({ streaks: [], schedules: [], heldPlans: [], scim: [], webhooks: [] }) });
  const names = new Map<string, Set<string>>();
  for (const metric of metrics.registry.getMetricsAsArray()) {
    const { name, labelNames } = metric as unknown as { name: string; labelNames: string[] };
    const type = (metric as unknown as { type: string }).type;
    const labels = [...labelNames, ...SCRAPE_LABELS];
    if (type === 'histogram') {
      names.set(`${name}_bucket`, new Set([...labels, 'le']));
      names.set(`${name}_sum`, new Set(labels));
      names.set(`${name}_count`, new Set(labels));
    } else if (type === 'summary') {
      names.set(name, new Set([...labels, 'quantile']));
      names.set(`${name}_sum`, new Set(labels));
      names.set(`${name}_count`, new Set(labels));
    } else {
      names.set(name, new Set(labels));
    }
  }
  return names;
}

/** Grafana's variables as values PromQL accepts: a range for the intervals, a string for the rest. */
function withoutVariables(expr: string): string {
  return expr.replaceAll('$__rate_interval', '5m').replaceAll('$__interval', '1m').replaceAll('$__range', '1h');
}

interface Query {
  where: string;
  expr: string;
  legend: string | undefined;
}

/** Every query of the dashboard: each panel's targets, and the template variables' label_values(). */
function queries(): Query[] {
  const found: Query[] = [];
  for (const panel of dashboard.panels) for (const target of panel.targets ?? []) found.push({ where: panel.title, expr: target.expr, legend: target.legendFormat });
  for (const variable of dashboard.templating.list.filter((v) => v.type === 'query')) {
    const text = z.union([z.string(), z.object({ query: z.string() })]).parse(variable.query);
    const query = typeof text === 'string' ? text : text.query;
    const match = /^label_values\((.+),\s*(\w+)\)$/.exec(query);
    expect(match, `variable ${variable.name}: label_values(selector, label)`).not.toBeNull();
    // The label asked for, as a grouping of the selector: checked like any other.
    found.push({ where: `variable ${variable.name}`, expr: `max by (${match![2]}) (${match![1]})`, legend: undefined });
  }
  return found;
}

/** What a query selects and which labels it uses, from its syntax tree. */
function uses(expr: string): { errors: string[]; metrics: Map<string, Set<string>>; grouping: Set<string> } {
  const text = withoutVariables(expr);
  const tree = parser.parse(text);
  const errors: string[] = [];
  const metrics = new Map<string, Set<string>>();
  const grouping = new Set<string>();
  const slice = (node: SyntaxNode): string => text.slice(node.from, node.to);
  tree.iterate({
    enter(ref) {
      if (ref.type.isError) errors.push(`syntax error at ${ref.from}: ${text.slice(Math.max(0, ref.from - 20), ref.to + 20)}`);
      if (ref.name === 'VectorSelector') {
        const node = ref.node;
        const name = node.getChild('Identifier');
        const matchers = node.getChild('LabelMatchers');
        const labels = new Set<string>();
        for (const matcher of matchers?.getChildren('UnquotedLabelMatcher') ?? []) labels.add(slice(matcher.getChild('LabelName')!));
        const key = name ? slice(name) : '';
        metrics.set(key, new Set([...(metrics.get(key) ?? []), ...labels]));
      }
      if (ref.name === 'GroupingLabels') for (const label of ref.node.getChildren('LabelName')) grouping.add(slice(label));
    },
  });
  return { errors, metrics, grouping };
}

describe('the Grafana dashboard', () => {
  it('has the panels an operator looks at', () => {
    const titles = dashboard.panels.map((p) => p.title);
    for (const title of ['Runs by outcome', 'Freshness per resource', 'Results per second', 'Request budget use', 'Held plans', 'Provisioning actions by outcome', 'SCIM answers', 'SCIM latency', 'Webhook lag', 'Queue depth']) {
      expect(titles).toContain(title);
    }
    expect(dashboard.uid).toBe('trainsync');
  });

  it('queries only metrics the worker exports, with the labels they carry', () => {
    const known = exported();
    // The registry is read: the histograms' series and the state gauges are there.
    expect(known.get('trainsync_scim_request_duration_seconds_bucket')).toEqual(new Set(['org', 'method', 'le', ...SCRAPE_LABELS]));
    expect(known.get('trainsync_sync_last_complete_timestamp_seconds')).toEqual(new Set(['org', 'resource', ...SCRAPE_LABELS]));
    const all = queries();
    expect(all.length).toBeGreaterThanOrEqual(15);
    const problems: string[] = [];
    for (const { where, expr, legend } of all) {
      const { errors, metrics, grouping } = uses(expr);
      problems.push(...errors.map((e) => `${where}: ${e}`));
      if (metrics.size === 0) problems.push(`${where}: selects no metric: ${expr}`);
      for (const [metric, labels] of metrics) {
        const has = known.get(metric);
        if (!has) {
          problems.push(`${where}: ${metric || '(a selector without a name)'} is not a metric the worker exports`);
          continue;
        }
        for (const label of labels) if (!has.has(label)) problems.push(`${where}: ${metric} has no label ${label}`);
        // Grouped by (by, on, without): a label of every metric the query selects.
        for (const label of grouping) if (!has.has(label)) problems.push(`${where}: groups by ${label}, which ${metric} does not carry`);
      }
      for (const [, label] of (legend ?? '').matchAll(/\{\{\s*(\w+)\s*\}\}/g)) {
        if (![...metrics.keys()].some((metric) => known.get(metric)?.has(label!))) problems.push(`${where}: the legend shows {{${label}}}, a label none of its metrics carries`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('is checked for real: a metric or a label the worker does not export is caught', () => {
    const known = exported();
    const { metrics } = uses('sum by (org) (rate(trainsync_rows_loaded_total{tabel="results"}[$__rate_interval])) + trainsync_no_such_metric');
    expect(known.get('trainsync_rows_loaded_total')?.has('tabel')).toBe(false);
    expect(known.has('trainsync_no_such_metric')).toBe(false);
    expect([...metrics.keys()]).toEqual(['trainsync_rows_loaded_total', 'trainsync_no_such_metric']);
    expect(uses('sum by (org (rate(x[5m]))').errors.length).toBeGreaterThan(0);
  });
});

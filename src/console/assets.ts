import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { CHARTS_JS, CONSOLE_CSS, QUEUES_CSS } from './client.ts';

/** Every asset the console serves, from the package itself (no CDN): ours, and uPlot from node_modules. */
export function loadAssets(): Map<string, { type: string; body: string }> {
  const require = createRequire(import.meta.url);
  const read = (specifier: string): string => readFileSync(require.resolve(specifier), 'utf8');
  return new Map([
    ['console.css', { type: 'text/css; charset=utf-8', body: CONSOLE_CSS }],
    ['queues.css', { type: 'text/css; charset=utf-8', body: QUEUES_CSS }],
    ['charts.js', { type: 'text/javascript; charset=utf-8', body: CHARTS_JS }],
    ['uplot.js', { type: 'text/javascript; charset=utf-8', body: read('uplot/dist/uPlot.iife.min.js') }],
    ['uplot.css', { type: 'text/css; charset=utf-8', body: read('uplot/dist/uPlot.min.css') }],
  ]);
}

/**
 * The console's own browser code and style, served as files from /assets (the CSP allows
 * no inline script or style). charts.js draws every `[data-chart]` element with uPlot.
 */

export const CHARTS_JS = `'use strict';
document.addEventListener('DOMContentLoaded', function () {
  var palette = ['#2f6fdf', '#d9822b', '#3a9d5d', '#c23b3b', '#7a5cc2'];
  document.querySelectorAll('[data-chart]').forEach(function (el) {
    var spec = JSON.parse(el.getAttribute('data-chart'));
    var series = [{}].concat(spec.labels.map(function (label, i) {
      return { label: label, stroke: palette[i % palette.length], width: 2, scale: spec.dual && i > 0 ? 'y2' : 'y' };
    }));
    var axes = [{}, { scale: 'y' }];
    if (spec.dual) axes.push({ scale: 'y2', side: 1 });
    var opts = { width: Math.min(el.clientWidth || 900, 1100), height: 260, series: series, axes: axes,
      scales: { x: { time: spec.x.length > 0 && spec.x[0] > 1e8 } } };
    new uPlot(opts, [spec.x].concat(spec.ys), el);
  });
});
`;

export const CONSOLE_CSS = `
body { font: 14px/1.45 system-ui, sans-serif; margin: 0; color: #1d2430; background: #f6f7f9; }
header { display: flex; gap: 1.5em; align-items: center; padding: .6em 1.2em; background: #1d2430; color: #fff; }
header a { color: #cfe0ff; margin-right: 1em; text-decoration: none; }
header .logout { margin-left: auto; }
header .org-select { display: flex; gap: .4em; align-items: center; }
p.scope { color: #4a5568; margin-top: -.4em; }
td.org { color: #4a5568; white-space: nowrap; }
main { padding: 1em 1.5em; }
table { border-collapse: collapse; background: #fff; margin: .5em 0 1em; }
th, td { border: 1px solid #dde1e6; padding: .3em .6em; text-align: left; vertical-align: top; }
th { background: #eef1f5; }
code { font-size: 12px; }
.badge { padding: 0 .5em; border-radius: 1em; background: #e2e6ea; }
.badge.succeeded, .badge.up, .badge.loaded, .badge.approved { background: #d3f2dc; }
.badge.failed, .badge.down, .badge.held { background: #fbd9d9; }
.badge.incomplete, .badge.needs-identity, .badge.queued { background: #fdf0c8; }
.filters label { margin-right: 1em; }
form.inline { display: inline; }
.reason { color: #7a2e2e; }
dl.counts { display: grid; grid-template-columns: max-content auto; gap: .2em 1em; }
dl.counts dt { font-weight: 600; }
.error { color: #b00020; }
.chart { margin: 1em 0; }
`;

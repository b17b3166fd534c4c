/**
 * The console's own browser code and style, served as files from /assets (the CSP allows
 * no inline script or style). charts.js draws every `[data-chart]` element with uPlot.
 */

export const CHARTS_JS = `'use strict';
// Times in UTC, 24-hour, as every table of the console shows them (whatever the browser's zone).
var S = 1, M = 60, H = 3600, D = 86400;
var UTC_TICKS = [
  // tick step, label, then the label where a new year/month/day/hour/minute/second starts (null: none), 1: appended
  [D * 365, '{YYYY}', null, null, null, null, null, null, 1],
  [D * 28, '{MMM}', '\\n{YYYY}', null, null, null, null, null, 1],
  [D, '{MM}-{DD}', '\\n{YYYY}', null, null, null, null, null, 1],
  [H, '{HH}:{mm}', '\\n{YYYY}-{MM}-{DD}', null, '\\n{MM}-{DD}', null, null, null, 1],
  [M, '{HH}:{mm}', '\\n{YYYY}-{MM}-{DD}', null, '\\n{MM}-{DD}', null, null, null, 1],
  [S, '{HH}:{mm}:{ss}', '\\n{YYYY}-{MM}-{DD}', null, '\\n{MM}-{DD}', null, null, null, 1]
];
function utc(ts) { return uPlot.tzDate(new Date(ts * 1e3), 'Etc/UTC'); }
// One point (or all at one time): an hour either side (uPlot widens it by 86,400 x 1,000 s, years).
function timeRange(u, min, max) {
  var xs = u.data[0];
  return xs.length > 0 && xs[0] === xs[xs.length - 1] ? [xs[0] - H, xs[0] + H] : [min, max];
}
// Each series is drawn as the page says: a line joins only its own points (over the gaps where
// other runs are), points alone are never joined; each axis carries its label and unit.
document.addEventListener('DOMContentLoaded', function () {
  document.querySelectorAll('[data-chart]').forEach(function (el) {
    var spec = JSON.parse(el.getAttribute('data-chart'));
    var time = spec.x.length > 0 && spec.x[0] > 1e8;
    var first = time ? { label: 'time (UTC)', value: '{YYYY}-{MM}-{DD} {HH}:{mm}:{ss} UTC' } : {};
    var series = [first].concat(spec.series.map(function (s) {
      var drawn = { label: s.label, stroke: s.color, width: 2, scale: s.axis, spanGaps: true, points: { show: true, size: 6, fill: s.color } };
      if (s.dash) drawn.dash = [6, 4];
      if (s.draw === 'points') { drawn.paths = function () { return null; }; drawn.points = { show: true, size: 9, fill: s.color, stroke: s.color }; }
      return drawn;
    }));
    var axes = [time ? { values: UTC_TICKS, label: spec.axes.x } : { label: spec.axes.x }, { scale: 'y', label: spec.axes.y }];
    if (spec.axes.y2) axes.push({ scale: 'y2', side: 1, label: spec.axes.y2, grid: { show: false } });
    var width = Math.max(280, Math.min(el.clientWidth || 900, 1100));
    var opts = { width: width, height: 280, series: series, axes: axes,
      scales: { x: time ? { time: true, range: timeRange } : { time: false } } };
    if (time) opts.tzDate = utc;
    new uPlot(opts, [spec.x].concat(spec.series.map(function (s) { return s.values; })), el);
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
p.ok { color: #1f6b3a; background: #e3f5e8; border: 1px solid #b7e2c3; padding: .4em .7em; border-radius: 4px; }
header { flex-wrap: wrap; row-gap: .3em; }
div.wide { max-width: 100%; overflow-x: auto; }
/* A wide table scrolls on its own in a narrow window; the page itself never scrolls sideways. */
main table:not(.u-legend) { display: block; width: max-content; max-width: 100%; overflow-x: auto; }
main table.change { display: table; }
main code, main td.reason { overflow-wrap: anywhere; }
.badge { white-space: nowrap; }
form.filters { display: flex; flex-wrap: wrap; gap: .4em 1em; align-items: center; }
td.run-error { color: #7a2e2e; min-width: 14em; max-width: 28em; overflow-wrap: anywhere; }
.chart { margin: 1em 0; }
time { white-space: nowrap; }
span.id { font-family: ui-monospace, monospace; font-size: 12px; white-space: nowrap; }
.relative { color: #4a5568; white-space: nowrap; }
table.change { margin: 0; font-size: 12px; background: transparent; }
table.change th, table.change td { padding: .1em .4em; }
table.change th[scope=row] { font-weight: 500; background: transparent; }
table.change tr.changed { background: #fff6d6; }
table.change del { color: #7a2e2e; }
table.change ins { text-decoration: none; font-weight: 600; color: #1f6b3a; }
p.why { margin: .3em 0 0; font-size: 12px; color: #4a5568; max-width: 36em; }
p.pager { margin-top: -.3em; }
figure.bars { margin: 1em 0; max-width: 900px; }
figure.bars figcaption { font-weight: 600; }
figure.bars svg { width: 100%; height: auto; background: #fff; border: 1px solid #dde1e6; }
figure.bars text { font: 12px system-ui, sans-serif; fill: #1d2430; }
figure.bars a:hover rect, figure.bars a:focus rect { stroke: #1d2430; stroke-width: 1.5; }
ul.legend { display: flex; gap: 1.2em; list-style: none; padding: 0; margin: .4em 0; }
.swatch { display: inline-block; width: .9em; height: .9em; margin-right: .35em; vertical-align: -.1em; border-radius: 2px; }
.st-passed { fill: #3a9d5d; background: #3a9d5d; }
.st-completed { fill: #2f6fdf; background: #2f6fdf; }
.st-failed { fill: #c23b3b; background: #c23b3b; }
.st-in_progress { fill: #e0a526; background: #e0a526; }
.st-not_started { fill: #a9b1bc; background: #a9b1bc; }
`;

/** The Queues page (bull-board's own page): only the way back to the console, pinned where bull-board draws nothing. */
export const QUEUES_CSS = `
#trainsync-back { position: fixed; left: 12px; bottom: 44px; z-index: 1000; padding: .35em .8em; border-radius: 6px;
  background: #1d2430; color: #fff; font: 600 13px/1.4 system-ui, sans-serif; text-decoration: none; box-shadow: 0 1px 3px rgba(0,0,0,.3); }
#trainsync-back:hover, #trainsync-back:focus { background: #2f6fdf; }
`;

import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { escapeHtml, html } from '../src/console/html.ts';
import { changeTable } from '../src/console/pages/change-table.ts';
import { statusBars } from '../src/console/pages/status-bars.ts';
import { relativeText, utcText } from '../src/console/time.ts';
import { hashConsolePassword, parseConsoleUsers, verifyConsolePassword } from '../src/settings/console-users.ts';

const COST = { N: 2 ** 12, r: 8, p: 1 };

describe('console building blocks', () => {
  it('escapes every interpolated value; only html`` output passes through as markup', () => {
    const hostile = `<script>alert("x")</script>&'`;
    expect(html`<td>${hostile}</td>`.text).toBe('<td>&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;</td>');
    expect(html`<p>${html`<b>${hostile}</b>`}</p>`.text).toBe(`<p><b>${escapeHtml(hostile)}</b></p>`);
    expect(html`<a title="${'" onmouseover="x'}">`.text).toBe('<a title="&quot; onmouseover=&quot;x">');
    expect(html`${[1, '<i>', null, undefined, false]}`.text).toBe('1&lt;i&gt;');
  });

  it('hashes with scrypt and verifies only the right password', async () => {
    const hash = await hashConsolePassword('correct horse battery', COST);
    expect(hash).toMatch(/^scrypt\$4096\$8\$1\$[A-Za-z0-9_-]+\$[A-Za-z0-9_-]+$/);
    expect(hash).not.toContain('correct horse');
    expect(await verifyConsolePassword('correct horse battery', hash)).toBe(true);
    expect(await verifyConsolePassword('correct horse batterY', hash)).toBe(false);
    expect(await verifyConsolePassword('correct horse battery', 'plain-text')).toBe(false);
    expect(await hashConsolePassword('correct horse battery', COST)).not.toBe(hash);
  });

  it('TRAINSYNC_CONSOLE_USERS takes name:role:hash entries and refuses a plain password without echoing it', async () => {
    const hash = await hashConsolePassword('pw-for-parse-test', COST);
    expect(parseConsoleUsers(`ana:operator:${hash}, ben:viewer:${hash}`)).toEqual([
      { name: 'ana', role: 'operator', hash },
      { name: 'ben', role: 'viewer', hash },
    ]);
    expect(parseConsoleUsers(`ana:admin:${hash}`)).toMatch(/role viewer or operator/);
    expect(parseConsoleUsers(`ana:operator:${hash},ana:viewer:${hash}`)).toMatch(/listed twice/);
    expect(parseConsoleUsers('ana:operator:hunter2')).toMatch(/never a password/);
    expect(() => loadConfig({ TRAINSYNC_CONSOLE_USERS: 'ana:operator:hunter2-secret' })).toThrow(/TRAINSYNC_CONSOLE_USERS: set but invalid/);
    try {
      loadConfig({ TRAINSYNC_CONSOLE_USERS: 'ana:operator:hunter2-secret' });
    } catch (error) {
      expect(String(error)).not.toContain('hunter2-secret');
    }
    expect(loadConfig({}).TRAINSYNC_CONSOLE_USERS).toBeUndefined();
  });

  it('shows a moment in UTC to the minute, labelled, whatever the zone of the machine; how far away in words', () => {
    const at = new Date('2026-11-26T02:00:59.999Z');
    expect(utcText(at)).toBe('2026-11-26 02:00 UTC');
    expect(html`<td>${at}</td>`.text).toBe('<td>2026-11-26 02:00 UTC</td>');
    const now = new Date('2026-11-25T23:10:00Z');
    expect(relativeText(at, now)).toBe('in 3 h');
    expect(relativeText(new Date('2026-11-25T23:22:00Z'), now)).toBe('in 12 min');
    expect(relativeText(new Date('2026-11-25T23:05:00Z'), now)).toBe('5 min ago');
    expect(relativeText(new Date('2026-11-25T23:10:30Z'), now)).toBe('in under a minute');
    expect(relativeText(new Date('2026-11-25T23:09:30Z'), now)).toBe('just now');
    expect(relativeText(new Date('2026-11-22T23:10:00Z'), now)).toBe('3 d ago');
  });

  it('draws assignment status as stacked bars: one per group, each segment as wide as its count, linked, escaped', () => {
    const hostile = '<b>Fire & "safety"</b> — a course with a name far too long to fit the label column';
    const svg = statusBars(
      [
        { label: 'Basics', counts: { passed: 30, failed: 10 } },
        { label: hostile, counts: { passed: 5, not_started: 15 } },
      ],
      { id: 'c', keys: ['passed', 'failed', 'not_started'], title: 'By course', href: (g, k) => `/x?${new URLSearchParams({ g, k }).toString()}` },
    ).text;
    const rects = [...svg.matchAll(/<rect class="st-(\w+)" data-status="\w+" data-count="(\d+)" x="([\d.]+)" y="[\d.]+" width="([\d.]+)"/g)].map((m) => ({ status: m[1], n: Number(m[2]), x: Number(m[3]), w: Number(m[4]) }));
    // Zero counts draw nothing; the largest bar (40) is the full 560 wide, the rest in proportion, segments end to end.
    expect(rects).toEqual([
      { status: 'passed', n: 30, x: 230, w: 420 },
      { status: 'failed', n: 10, x: 650, w: 140 },
      { status: 'passed', n: 5, x: 230, w: 70 },
      { status: 'not_started', n: 15, x: 300, w: 210 },
    ]);
    expect(svg).toContain('<a href="/x?g=Basics&amp;k=failed">');
    expect(svg).toContain('<title>Basics: failed 10</title>');
    expect(svg).toContain('role="img" aria-label="By course"');
    expect(svg).not.toContain('<b>');
    expect(svg).toContain(`<title>${escapeHtml(hostile)}</title>${escapeHtml(hostile.slice(0, 33))}…</text>`);
  });

  it('shows before → after as fields, marking each changed one in the markup, and any reason apart', () => {
    const table = changeTable({ active: true, role: 'USER' }, { active: false, role: 'USER', repair: 'left the company' }).text;
    expect(table).toContain('<tr class="changed"><th scope="row">active</th><td><del>true</del></td><td><ins>false</ins></td></tr>');
    expect(table).toContain('<tr><th scope="row">role</th><td>USER</td><td>USER</td></tr>');
    expect(table).toContain('<p class="why">Why: left the company</p>');
    expect(changeTable(null, { email: '<x@y>' }).text).toContain('<tr class="changed"><th scope="row">email</th><td>&mdash;</td><td><ins>&lt;x@y&gt;</ins></td></tr>');
    // A UUID by its first eight characters, the whole kept in the tooltip (a full one wrapped over four lines).
    const id = 'f3fb027e-b963-4286-a43f-946d54a1e541';
    expect(changeTable(null, { platformUserId: id }).text).toContain(`<ins><span class="id" title="${id}" data-id="${id}">f3fb027e&hellip;</span></ins>`);
  });
});

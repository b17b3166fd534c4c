import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { escapeHtml, html } from '../src/console/html.ts';
import { hashConsolePassword, parseConsoleUsers, verifyConsolePassword } from '../src/lib/console-users.ts';

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
});

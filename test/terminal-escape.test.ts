import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { fitTable } from '../src/commands/render/fit-table.ts';
import { fitText } from '../src/commands/render/terminal.ts';
import { formatFeedCheck, feedCheckReport } from '../src/commands/render/feed-check-report.ts';
import { showControls } from '../src/lib/terminal-safe.ts';
import { runCli } from './helpers/cli.ts';
import { feedDir } from './helpers/hr-feed.ts';
import { runInTerminal } from './helpers/terminal.ts';

/**
 * Control characters from data never reach a terminal raw: an HR value's `ESC[2J` (clear
 * the screen) or OSC title sequence is shown as `\u001b[2J`, in every table (fitTable),
 * every text a command renders (fitText), and anything else written to stdout on a
 * terminal (the CLI's guard of stdout).
 */

/** Any C0 control but the newline, DEL, C1 controls, bidirectional overrides. */
const RAW_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;
const CLEAR = '\u001b[2J';
const TITLE = '\u001b]0;pwned\u0007';
const C1_CSI = '\u009b31m';

const files = feedDir();
afterAll(() => files.cleanup());

const hostile = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom(CLEAR, TITLE, C1_CSI, '\u202eevil', 'a\rb', 'x\by', '\u0000', '\u001b'),
);

describe('terminal output of data', () => {
  it('showControls leaves no raw control character but the newline, and keeps printable text as it was (property)', () => {
    fc.assert(
      fc.property(hostile, (s) => {
        const shown = showControls(s);
        expect(shown).not.toMatch(RAW_CONTROL);
        if (!RAW_CONTROL.test(s)) expect(shown).toBe(s);
      }),
      { numRuns: 500 },
    );
  });

  it('fitTable and fitText draw arbitrary cells with no raw control character (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(hostile, hostile, hostile), { maxLength: 5 }), hostile, fc.integer({ min: 30, max: 120 }), (rows, head, width) => {
        const table = fitTable([head, 'b', 'c'], rows, { width });
        for (const line of table.split('\n')) expect(line).not.toMatch(RAW_CONTROL);
        expect(fitText(rows.flat().join(' '), width)).not.toMatch(RAW_CONTROL);
      }),
      { numRuns: 200 },
    );
  });

  it('feed check shows a first name holding ESC[2J and an OSC title escaped, not raw', async () => {
    const file = files.write('hostile.csv', `employee_id,email,first_name,last_name,status\nE1,e1@example.com,${CLEAR}Eve,${TITLE}Smith,active\nE2,e2@example.com,${C1_CSI}Al,\u202eOwen,active\n`);
    const run = await runCli(['feed', 'check', file], {});
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).not.toMatch(RAW_CONTROL);
    expect(run.stdout).toContain('\\u001b[2JEve');
    expect(run.stdout).toContain('\\u001b]0;pwned\\u0007Smith');
    // --json carries the value as it is (JSON escapes it).
    const json = await runCli(['feed', 'check', file, '--json'], {});
    expect((JSON.parse(json.stdout) as { rows: Array<{ firstName: string }> }).rows[0]!.firstName).toBe(`${CLEAR}Eve`);
  });

  it('on a terminal too: the screen is not cleared and no title is set by the feed', async () => {
    const file = files.write('hostile-tty.csv', `employee_id,email,first_name,last_name,status\nE1,e1@example.com,${CLEAR}Eve,${TITLE}Smith,active\n`);
    const run = await runInTerminal(['feed', 'check', file], {}, 100);
    expect(run.code).toBe(0);
    expect(run.raw).not.toContain(CLEAR);
    expect(run.raw).not.toContain('\u001b]0;');
    expect(run.screen.join('\n')).toContain('\\u001b[2JEve');
  });

  it('the feed check report renders an error value with controls escaped', () => {
    const report = feedCheckReport(
      { rows: [], errors: [{ line: 2, field: 'email', code: 'invalid-email', value: CLEAR, message: `line 2: email ${CLEAR} is not an e-mail` }], fileErrors: [], lineCount: 2 } as never,
      { file: 'x.csv', rows: 10 },
    );
    expect(fitText(formatFeedCheck(report))).not.toMatch(RAW_CONTROL);
  });
});

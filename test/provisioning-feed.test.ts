import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ColumnMapError, parseColumnMap } from '../src/provisioning/feed/columns.ts';
import { FeedDecoder, FeedEncodingError } from '../src/provisioning/feed/lines.ts';
import { readFeed } from '../src/provisioning/feed/read.ts';

const FIXTURES = fileURLToPath(new URL('./fixtures/feeds/', import.meta.url));
const fixture = (name: string): string => path.join(FIXTURES, name);
const G1 = '6f9619ff-8b86-d011-b42d-00c04fc964ff';
const G2 = '3f2504e0-4f89-11d3-9a0c-0305e82c3301';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'trainsync-feed-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('parseColumnMap', () => {
  it('maps fields to headers, keeping spaces inside header names', () => {
    const map = parseColumnMap('email=Work Email, employee_id=Emp No');
    expect([...map]).toEqual([
      ['email', 'Work Email'],
      ['employee_id', 'Emp No'],
    ]);
  });

  it('names the valid fields when the left side is unknown', () => {
    expect(() => parseColumnMap('mail=Work Email')).toThrow(ColumnMapError);
    expect(() => parseColumnMap('mail=Work Email')).toThrow(/"mail" is not a feed field; valid fields: employee_id, email, first_name/);
    expect(() => parseColumnMap('email=')).toThrow(/email has no header name/);
  });
});

describe('readFeed: CSV', () => {
  it('reads BOM, CRLF, quoted commas and newlines, blank lines, and normalises values', async () => {
    const bytes = await readFile(fixture('good.csv'));
    expect(bytes.subarray(0, 3).toString('hex')).toBe('efbbbf');
    expect(bytes.includes('\r\n')).toBe(true);

    const result = await readFeed(fixture('good.csv'));
    expect(result.fileErrors).toEqual([]);
    expect(result.errors).toEqual([]);
    expect(result.hash).toBe(createHash('sha256').update(bytes).digest('hex'));
    expect(result.lineCount).toBe(7);
    expect([...result.rows]).toEqual([
      {
        line: 2, employeeId: 'E001', email: 'ann.smith@example.com', emailDisplay: 'Ann.Smith@Example.com',
        firstName: 'Ann', lastName: 'Smith, Jr', status: 'active', groups: [G2, G1].sort(), role: 'USER', organisationIdentifier: 'E001',
      },
      {
        line: 3, employeeId: 'E002', email: 'bob@example.com', emailDisplay: 'bob@example.com',
        firstName: 'Bob', lastName: 'Multi\r\nLine', status: 'inactive', groups: [], role: 'ADMIN', organisationIdentifier: 'ORG-2',
      },
      {
        line: 5, employeeId: 'E003', email: 'zoe@example.com', emailDisplay: 'zoe@example.com',
        firstName: 'Zoë', lastName: 'Ünal', status: 'active', groups: [G1], role: 'USER', organisationIdentifier: 'E003', platformUserId: G2,
      },
      {
        line: 7, employeeId: 'E004', email: 'dan@example.com', emailDisplay: 'dan@example.com',
        firstName: 'Dan', lastName: 'Doe', status: 'active', groups: [], role: 'USER', organisationIdentifier: 'E004',
      },
    ]);
  });

  it('reads renamed headers through --map', async () => {
    const map = parseColumnMap('employee_id=Emp No,email=Work Email,first_name=Given Name,last_name=Family Name,status=Employment Status');
    const result = await readFeed(fixture('mapped.csv'), { map });
    expect(result.fileErrors).toEqual([]);
    expect(result.rows.map((r) => [r.employeeId, r.email, r.lastName, r.status])).toEqual([
      ['E100', 'a@example.com', 'Alpha', 'active'],
      ['E101', 'b@example.com', 'Beta', 'inactive'],
    ]);
  });

  it('refuses a header without the required fields, naming them, the headers found and the --map fix', async () => {
    const result = await readFeed(fixture('wrong-header.csv'));
    expect([...result.rows]).toEqual([]);
    expect(result.fileErrors).toHaveLength(1);
    const message = result.fileErrors[0]!;
    expect(message).toContain('wrong-header.csv line 1');
    expect(message).toContain('no column for employee_id, email');
    expect(message).toContain('headers found: "id", "mail", "first_name", "last_name"');
    expect(message).toContain('--map "employee_id=<Header>,email=<Header>"');

    const unmappedColumn = await readFeed(fixture('mapped.csv'), { map: parseColumnMap('email=E-mail') });
    expect(unmappedColumn.fileErrors[0]).toContain('looked for "employee_id", "E-mail"');
  });

  // Was a row error that planned the rows before the quote (exit 1); a cut-off file must stop the run.
  it('refuses a file with an unterminated quote, naming the line it opens and the fix', async () => {
    const result = await readFeed(fixture('truncated.csv'));
    expect([...result.rows]).toEqual([]);
    expect(result.errors).toEqual([]);
    expect(result.fileErrors).toEqual([
      'truncated.csv line 3: a value opened with a double quote is never closed, so the file looks cut off (or a closing quote is missing); nothing was planned: export the file again',
    ]);
  });

  it('names the line of the unclosed quote, not of its record, past blank lines and closed multi-line values', async () => {
    const file = path.join(dir, 'open-late.csv');
    // The record starts on line 4; its last_name quote opens on line 5.
    await writeFile(file, 'employee_id,email,first_name,last_name\r\nE1,a@example.com,A,Alpha\r\n\r\nE2,b@example.com,"Multi\r\nLine ""B""","Beta\r\nE3,c@example.com,C,Gamma\r\n');
    const result = await readFeed(file);
    expect([...result.rows]).toEqual([]);
    expect(result.fileErrors).toHaveLength(1);
    expect(result.fileErrors[0]).toMatch(/^open-late\.csv line 5: a value opened with a double quote is never closed/);
  });

  it('refuses a header row whose quote is never closed, instead of calling the file empty', async () => {
    const file = path.join(dir, 'open-header.csv');
    await writeFile(file, 'employee_id,"email\nE1,a@example.com\n');
    const result = await readFeed(file);
    expect(result.fileErrors).toEqual([expect.stringMatching(/^open-header\.csv line 1: a value opened with a double quote is never closed/)]);
  });

  it('reports a record with too few columns at its line and reads on', async () => {
    const result = await readFeed(fixture('short-record.csv'));
    expect(result.rows.map((r) => r.employeeId)).toEqual(['E1', 'E3']);
    expect(result.errors).toHaveLength(1);
    expect(result.errors[0]!.message).toBe(
      'short-record.csv line 3: the record has 2 values but the header has 5 columns (the file may have been cut off, or a line broken inside a value); fix the row in the HR export',
    );
    expect(result.invalidEmployeeIds.has('E2')).toBe(true);
    expect(result.invalidEmails.has('b@example.com')).toBe(true);
  });

  it('leaves out every row sharing an employee_id or e-mail, naming the other lines', async () => {
    const result = await readFeed(fixture('duplicates.csv'));
    expect(result.rows.map((r) => r.employeeId)).toEqual(['E5']);
    const messages = result.errors.map((e) => e.message);
    expect(messages).toEqual([
      'duplicates.csv line 2, field employee_id: "E1" appears also on line 4; every row involved is left out; keep one row per employee in the HR export',
      'duplicates.csv line 3, field email: "b@example.com" appears also on line 5; every row involved is left out; keep one row per employee in the HR export',
      'duplicates.csv line 4, field employee_id: "E1" appears also on line 2; every row involved is left out; keep one row per employee in the HR export',
      'duplicates.csv line 5, field email: "b@example.com" appears also on line 3; every row involved is left out; keep one row per employee in the HR export',
    ]);
    expect([...result.invalidEmployeeIds].sort()).toEqual(['E1', 'E2', 'E4']);
    expect([...result.invalidEmails].sort()).toEqual(['a@example.com', 'b@example.com', 'c@example.com']);
  });

  it('reports each bad value with file, line, field and fix, and keeps the readable keys', async () => {
    const result = await readFeed(fixture('bad-values.csv'));
    expect(result.rows.map((r) => r.employeeId)).toEqual(['E7']);
    const byLine = new Map(result.errors.map((e) => [e.line, e]));
    expect(byLine.get(2)!.message).toBe('bad-values.csv line 2, field email: "bob@" is not an e-mail address; fix the value in the HR export or drop the row');
    expect(byLine.get(3)).toMatchObject({ field: 'status', value: 'retired' });
    expect(byLine.get(3)!.message).toContain('"retired" is not a status; use one of active, 1, true, enabled, employed (active) or inactive, terminated');
    expect(byLine.get(4)!.message).toContain('field groups: "not-a-guid" is not a group GUID');
    expect(byLine.get(5)!.message).toContain('field role: "OWNER" is not a role; use USER or ADMIN');
    expect(byLine.get(6)!.message).toContain('field platform_user_id: "12345" is not a GUID');
    expect(byLine.get(7)!.message).toContain('field employee_id: is empty; every row needs an employee_id');
    expect([...result.invalidEmployeeIds].sort()).toEqual(['E1', 'E2', 'E3', 'E4', 'E5']);
    expect(result.invalidEmails.has('bob@')).toBe(true);
    expect(result.invalidEmails.has('g@example.com')).toBe(true);
  });

  it('names the mapped column in a value error', async () => {
    const file = path.join(dir, 'mapped-bad.csv');
    await writeFile(file, 'Emp No,Work Email\nE1,not-an-email\n');
    const result = await readFeed(file, { map: parseColumnMap('employee_id=Emp No,email=Work Email') });
    expect(result.errors[0]!.message).toBe(
      'mapped-bad.csv line 2, field email (column "Work Email"): "not-an-email" is not an e-mail address; fix the value in the HR export or drop the row',
    );
  });

  it('gives a file error for a missing or empty file', async () => {
    const missing = await readFeed(path.join(dir, 'nope.csv'));
    expect(missing.fileErrors[0]).toMatch(/^cannot read nope\.csv: ENOENT/);
    const empty = path.join(dir, 'empty.csv');
    await writeFile(empty, '');
    const result = await readFeed(empty);
    expect(result.fileErrors).toEqual(['empty.csv is empty: expected a header row naming the columns (at least employee_id and email)']);
    expect(result.lineCount).toBe(0);
  });

  it.each([['LF', '\n'], ['CRLF', '\r\n']])('keeps line numbers right across chunk boundaries in a large %s file', async (_name, eol) => {
    const file = path.join(dir, `large-${_name}.csv`);
    const lines = ['employee_id,email,first_name,last_name'];
    for (let i = 0; i < 5000; i += 1) {
      lines.push(i % 1000 === 500 ? `E${i},bad-${i}@,"Multi${eol}line",X` : `E${i},e${i}@example.com,"First, ${i}",Last`);
      // Blank lines (some doubled), some right before a bad row, whose line number must skip them.
      if (i % 777 === 0 || i % 2000 === 499) lines.push('');
      if (i % 2000 === 499) lines.push('');
    }
    await writeFile(file, `${lines.join(eol)}${eol}`);
    const result = await readFeed(file);
    expect(result.rows).toHaveLength(4995);
    const expected: number[] = [];
    let physical = 1;
    for (let i = 0; i < 5000; i += 1) {
      physical += 1;
      if (i % 1000 === 500) {
        expected.push(physical);
        physical += 1;
      }
      if (i % 777 === 0 || i % 2000 === 499) physical += 1;
      if (i % 2000 === 499) physical += 1;
    }
    expect(result.errors.map((e) => e.line)).toEqual(expected);
    expect(result.lineCount).toBe(physical);
  });
});

/** The text as UTF-16 with a BOM; big-endian by swapping each code unit's bytes. */
function utf16(text: string, order: 'LE' | 'BE'): Buffer {
  const bytes = Buffer.from(`\ufeff${text}`, 'utf16le');
  return order === 'LE' ? bytes : bytes.swap16();
}

describe('readFeed: encodings', () => {
  it('refuses a CSV with bytes that are not UTF-8, naming the line, the byte and the fix', async () => {
    const result = await readFeed(fixture('invalid-utf8.csv'));
    expect([...result.rows]).toEqual([]);
    // "E2,b@example.com,J" then 0xFF: the 19th byte of line 3, which starts at offset 66.
    expect(result.fileErrors).toEqual([
      'invalid-utf8.csv line 3, byte 19 (offset 84 in the file): the byte 0xFF is not valid UTF-8 here (the file has no UTF-16 byte-order mark, so it is read as UTF-8), ' +
        'so the text cannot be read; nothing was planned: if the export is Windows-1252 or Latin-1 (there 0xFF is "ÿ"), as many HR systems on Windows write it, ' +
        'put "encoding": "windows-1252" in a feed profile (--profile FILE.json); or save the export as UTF-8',
    ]);
  });

  it('refuses a JSON Lines file with bytes that are not UTF-8, naming the line', async () => {
    const result = await readFeed(fixture('invalid-utf8.jsonl'));
    expect([...result.rows]).toEqual([]);
    expect(result.fileErrors).toHaveLength(1);
    expect(result.fileErrors[0]).toMatch(/^invalid-utf8\.jsonl line 2, byte 85 \(offset 174 in the file\): the byte 0xFC is not valid UTF-8 here .*\(there 0xFC is "ü"\).*"encoding": "windows-1252"/);
  });

  it.each([
    ['LE', 'LF', '\n'],
    ['LE', 'CRLF', '\r\n'],
    ['BE', 'LF', '\n'],
    ['BE', 'CRLF', '\r\n'],
  ] as const)('reads a UTF-16%s CSV with %s and reports a bad row at its own line', async (order, eol, newline) => {
    // U+010A and U+0A0D hold the byte 0x0A, which must not be taken for a line feed.
    const text = ['employee_id,email,first_name,last_name', 'E1,a@example.com,Zoë,\u010a\u0a0d', 'E2,bob@,Bob,Beta', 'E3,c@example.com,"Multi', 'Line",Gamma', ''].join(newline);
    const bytes = utf16(text, order);
    const file = path.join(dir, `utf16-${order}-${eol}.csv`);
    await writeFile(file, bytes);
    const result = await readFeed(file);
    expect(result.fileErrors).toEqual([]);
    expect(result.errors.map((e) => e.message)).toEqual([
      `utf16-${order}-${eol}.csv line 3, field email: "bob@" is not an e-mail address; fix the value in the HR export or drop the row`,
    ]);
    expect(result.rows.map((r) => [r.line, r.employeeId, r.firstName, r.lastName])).toEqual([
      [2, 'E1', 'Zoë', '\u010a\u0a0d'],
      [4, 'E3', `Multi${newline}Line`, 'Gamma'],
    ]);
    expect(result.lineCount).toBe(5);
    expect(result.hash).toBe(createHash('sha256').update(bytes).digest('hex'));
  });

  it.each(['LE', 'BE'] as const)('reads UTF-16%s JSON Lines with the right line numbers', async (order) => {
    const file = path.join(dir, `utf16-${order}.jsonl`);
    await writeFile(file, utf16('{"employee_id": "J1", "email": "j1@example.com", "first_name": "Zoë"}\r\n\r\n{"employee_id": "J3", "email": "j3@"}\r\n', order));
    const result = await readFeed(file);
    expect(result.fileErrors).toEqual([]);
    expect(result.rows.map((r) => [r.line, r.employeeId, r.firstName])).toEqual([[1, 'J1', 'Zoë']]);
    expect(result.errors.map((e) => [e.line, e.field])).toEqual([[3, 'email']]);
  });

  it('refuses a UTF-16 file cut off inside a character or holding a lone surrogate', async () => {
    const cut = path.join(dir, 'utf16-cut.csv');
    await writeFile(cut, utf16('employee_id,email\nE1,a@example.com\nE2,b', 'LE').subarray(0, -1));
    // The BOM and two lines (2 + 36 + 34 bytes), then "E2," and the half of "b" that is left: the cut character starts at offset 78.
    expect((await readFeed(cut)).fileErrors).toEqual([
      expect.stringMatching(/^utf16-cut\.csv line 3, byte 7 \(offset 78 in the file\): bytes that are not valid UTF-16LE \(the file starts with a UTF-16LE byte-order mark\)/),
    ]);
    const lone = path.join(dir, 'utf16-lone.csv');
    await writeFile(lone, utf16('employee_id,email\nE1,a@example.com,\ud800x\nE2,b@example.com\n', 'BE'));
    // The BOM (2) and line 1 (18 characters with its LF: 36 bytes), then "E1,a@example.com," (17 characters): the surrogate.
    expect((await readFeed(lone)).fileErrors).toEqual([
      expect.stringMatching(/^utf16-lone\.csv line 2, byte 35 \(offset 72 in the file\): bytes that are not valid UTF-16BE .*save the export as UTF-8, or UTF-16 with a BOM$/),
    ]);
  });

  it.each([['UTF-8', 'utf8'], ['UTF-16LE', 'LE'], ['UTF-16BE', 'BE']] as const)(
    'keeps line numbers right across chunk boundaries in a large %s file, up to undecodable bytes',
    async (_name, encoding) => {
      const lines = ['employee_id,email,first_name,last_name'];
      for (let i = 1; i < 6000; i += 1) lines.push(i % 1000 === 500 ? `E${i},bad-${i}@,Zoë,"Ünal${'\r\n'}Ünal"` : `E${i},e${i}@example.com,Zoë ${i},Ünal`);
      const text = `${lines.join('\r\n')}\r\n`;
      const encode = (t: string): Buffer => (encoding === 'utf8' ? Buffer.from(t) : utf16(t, encoding));
      const file = path.join(dir, `large-${encoding}.csv`);
      await writeFile(file, encode(text));
      const result = await readFeed(file);
      expect(result.fileErrors).toEqual([]);
      // Bad rows are lines 501, 1501, …; each holds a line break, so later ones sit one line further per earlier one.
      expect(result.errors.map((e) => e.line)).toEqual([501, 1502, 2503, 3504, 4505, 5506]);
      expect(result.lineCount).toBe(6006);

      // A lone surrogate in UTF-16, or a Latin-1 byte in UTF-8, far past the first chunk.
      const broken = encode(text.replace('Zoë 5000,', '\ud800 5000,'));
      if (encoding === 'utf8') broken.writeUInt8(0xe9, broken.indexOf('E5001,') - 4);
      await writeFile(file, broken);
      // Far past the first chunk, the offset is still the file's: the bad byte's own.
      const bad = encoding === 'utf8' ? broken.indexOf(Buffer.from([0xe9])) : broken.indexOf(utf16('\ud800 5000,', encoding).subarray(2));
      expect((await readFeed(file)).fileErrors[0]).toMatch(new RegExp(`^large-${encoding}\\.csv line ${5000 + 5 + 1}, byte \\d+ \\(offset ${bad} in the file\\): `));
    },
  );

  it('decodes the same text whatever the chunk sizes', () => {
    const text = 'employee_id,email\r\nE1,zoë@example.com\u010a\n😀,x\n';
    for (const bytes of [Buffer.from(text), utf16(text, 'LE'), utf16(text, 'BE')]) {
      for (const size of [1, 2, 3, 5]) {
        const decoder = new FeedDecoder();
        let out = '';
        for (let at = 0; at < bytes.length; at += size) out += decoder.write(bytes.subarray(at, at + size));
        out += decoder.end();
        expect(out).toBe(text);
        expect(decoder.lineCount).toBe(3);
      }
    }
  });

  it('finds a bad character at its first byte whatever the chunk sizes, a BOM and a real U+FFFD before it', () => {
    // "€" cut short (E2 82, then "A") after a U+FFFD the file really holds: the BOM (3) and line 1 (9), then "E1," and U+FFFD (6).
    const bytes = Buffer.concat([Buffer.from('\ufeffid,email\nE1,\ufffd'), Buffer.from([0xe2, 0x82]), Buffer.from('A\n')]);
    expect(bytes.indexOf(Buffer.from([0xe2, 0x82]))).toBe(18);
    for (const size of [1, 2, 3, 5, 64]) {
      const decoder = new FeedDecoder();
      let caught: unknown;
      try {
        for (let at = 0; at < bytes.length; at += size) decoder.write(bytes.subarray(at, at + size));
        decoder.end();
      } catch (error) {
        caught = error;
      }
      expect(caught, `chunks of ${size}`).toBeInstanceOf(FeedEncodingError);
      expect((caught as FeedEncodingError).at, `chunks of ${size}`).toEqual({ offset: 18, column: 7, byte: 0xe2 });
      expect((caught as FeedEncodingError).line).toBe(2);
    }
  });
});

describe('readFeed: JSON Lines', () => {
  it('reads objects with numbers, booleans and group lists, skipping blank lines', async () => {
    const result = await readFeed(fixture('good.jsonl'));
    expect(result.fileErrors).toEqual([]);
    expect(result.errors).toEqual([]);
    expect([...result.rows]).toMatchObject([
      { line: 1, employeeId: 'J1', email: 'j1@example.com', groups: [G2], status: 'active', role: 'USER' },
      { line: 2, employeeId: '2', email: 'j2@example.com', emailDisplay: 'J2@example.com', groups: [G2, G1].sort(), status: 'inactive', role: 'ADMIN' },
      { line: 4, employeeId: 'J3', firstName: null, lastName: null, organisationIdentifier: 'J3' },
    ]);
  });

  it('reports bad JSON lines by number and salvages keys of a cut-off line', async () => {
    const result = await readFeed(fixture('bad.jsonl'));
    expect(result.rows.map((r) => r.employeeId)).toEqual(['J1']);
    expect(result.errors.map((e) => [e.line, e.code])).toEqual([
      [2, 'invalid-json'],
      [3, 'invalid-json'],
      [4, 'invalid-value'],
      [5, 'invalid-json'],
    ]);
    expect(result.errors[0]!.message).toMatch(/^bad\.jsonl line 2: not valid JSON \(.+\); each line must be one complete JSON object/);
    expect(result.errors[1]!.message).toContain('bad.jsonl line 3: not a JSON object');
    expect(result.errors[2]!.message).toBe('bad.jsonl line 4, field email: "j4@" is not an e-mail address; fix the value in the HR export or drop the row');
    expect([...result.invalidEmployeeIds].sort()).toEqual(['J4', 'J5']);
    expect(result.invalidEmails.has('j5@example.com')).toBe(true);
  });

  it('honours --format over the extension', async () => {
    const file = path.join(dir, 'feed.txt');
    await writeFile(file, '{"employee_id":"X1","email":"x1@example.com"}\n');
    const result = await readFeed(file, { format: 'jsonl' });
    expect(result.rows.map((r) => r.employeeId)).toEqual(['X1']);
  });
});

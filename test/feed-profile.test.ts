import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseColumnMap } from '../src/provisioning/feed/columns.ts';
import { compileDateFormat } from '../src/provisioning/feed/date-format.ts';
import { detectDelimiter } from '../src/provisioning/feed/delimiter.ts';
import { feedReadOptions, FeedProfileError, loadFeedProfile, parseFeedProfile } from '../src/provisioning/feed/profile.ts';
import { readFeed } from '../src/provisioning/feed/read.ts';
import { runCli, stderrSaid } from './helpers/cli.ts';
import { freePort } from './helpers/own-services.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'trainsync-profile-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function file(name: string, text: string | Buffer): Promise<string> {
  const at = path.join(dir, name);
  await writeFile(at, text);
  return at;
}

/** The problems of a profile that is refused (fails the test if it is accepted). */
function problemsOf(text: string, name = 'p.json'): string[] {
  try {
    parseFeedProfile(text, name);
  } catch (error) {
    expect(error).toBeInstanceOf(FeedProfileError);
    return (error as FeedProfileError).problems;
  }
  throw new Error('the profile was accepted');
}

/** A TCP port nothing listens on (taken and released). */
describe('delimiter detection', () => {
  it.each([
    ['semicolon', ';'],
    ['tab', '\t'],
    ['pipe', '|'],
    ['comma', ','],
  ])('reads a %s-separated export without any option', async (name, d) => {
    const lines = [['employee_id', 'email', 'first_name', 'last_name', 'status'], ['E1', 'a@example.com', 'Ann', 'Smith, Jr', 'active'], ['E2', 'b@example.com', 'Bob', 'Beta', 'terminated']];
    const text = lines.map((l) => l.map((v) => (v.includes(d) ? `"${v}"` : v)).join(d)).join('\r\n');
    const result = await readFeed(await file(`${name}.csv`, `${text}\r\n`));
    expect(result.fileErrors).toEqual([]);
    expect(result.errors).toEqual([]);
    expect(result.reading).toMatchObject({ delimiter: d, delimiterDetected: true });
    expect(result.rows.map((r) => [r.employeeId, r.email, r.lastName, r.status])).toEqual([
      ['E1', 'a@example.com', 'Smith, Jr', 'active'],
      ['E2', 'b@example.com', 'Beta', 'inactive'],
    ]);
  });

  it('counts separators outside quotes only, and falls back on a comma', () => {
    expect(detectDelimiter('"Name, last, first";"E-mail, work";Id')).toBe(';');
    expect(detectDelimiter('employee_id')).toBe(',');
    expect(detectDelimiter('a;b,c')).toBe(',');
    expect(detectDelimiter('a|b|c,d')).toBe('|');
  });

  it('detects from the first line with text, past blank lines', async () => {
    const result = await readFeed(await file('blank-first.csv', '\n\nemployee_id;email\nE1;a@example.com\n'));
    expect(result.fileErrors).toEqual([]);
    expect(result.rows.map((r) => [r.line, r.employeeId])).toEqual([[4, 'E1']]);
  });

  it('names the semicolon in the message for a short record', async () => {
    const result = await readFeed(await file('short.csv', 'employee_id;email;first_name\nE1;a@example.com\n'));
    expect(result.errors[0]!.message).toContain('the record has 2 values but the header has 3 columns');
  });

  it('uses the profile delimiter when given, without detecting', async () => {
    // A header full of commas, but the profile says ";".
    const at = await file('forced.csv', 'employee_id;email;Note\nE1;a@example.com;"a, b, c"\n');
    const result = await readFeed(at, { delimiter: ';' });
    expect(result.reading).toMatchObject({ delimiter: ';', delimiterDetected: false });
    expect(result.rows.at(0)!.attributes).toEqual({ Note: 'a, b, c' });
  });
});

describe('status map', () => {
  const profile = parseFeedProfile(JSON.stringify({ statusMap: { 'Long-term leave': 'inactive', 'On Leave': 'active', 'Terminated - Voluntary': 'inactive' } }), 'p.json');

  it('maps words ignoring case and spacing, on top of the built-in words', async () => {
    const at = await file(
      'status.csv',
      [
        'employee_id,email,status',
        'E1,e1@example.com,long-term  LEAVE',
        'E2,e2@example.com, ON leave ',
        'E3,e3@example.com,Terminated-Voluntary',
        'E4,e4@example.com,terminated',
        'E5,e5@example.com,active',
        'E6,e6@example.com,Retired',
      ].join('\n'),
    );
    const result = await readFeed(at, feedReadOptions(profile));
    expect(result.rows.map((r) => [r.employeeId, r.status])).toEqual([
      ['E1', 'inactive'],
      ['E2', 'active'],
      ['E3', 'inactive'],
      ['E4', 'inactive'],
      ['E5', 'active'],
    ]);
    expect(result.errors).toHaveLength(1);
    expect(result.errors[0]).toMatchObject({ line: 7, field: 'status', value: 'Retired' });
    expect(result.errors[0]!.message).toContain('status.csv line 7, field status: "Retired" is not a status');
    expect(result.errors[0]!.message).toContain(`a profile's "statusMap"`);
    expect(result.invalidEmployeeIds.has('E6')).toBe(true);
  });

  it('rejects unknown words without a profile', async () => {
    const at = await file('status-plain.csv', 'employee_id,email,status\nE1,e1@example.com,Long-term leave\n');
    const result = await readFeed(at);
    expect([...result.rows]).toEqual([]);
    expect(result.errors.map((e) => [e.line, e.field])).toEqual([[2, 'status']]);
  });

  it('lets the profile override a built-in word', async () => {
    const at = await file('status-override.csv', 'employee_id,email,status\nE1,e1@example.com,Leave\n');
    const result = await readFeed(at, feedReadOptions(parseFeedProfile('{"statusMap": {"leave": "active"}}', 'p.json')));
    expect(result.rows.map((r) => r.status)).toEqual(['active']);
  });
});

describe('end-date leaver rule', () => {
  const header = 'employee_id,email,status,End Date';

  it('makes a past end date inactive and leaves today, the future and an empty date alone', async () => {
    const at = await file(
      'end.csv',
      [
        header,
        'E1,e1@example.com,,14-6-2025', // yesterday
        'E2,e2@example.com,,15-6-2025', // today
        'E3,e3@example.com,,1-1-2031',
        'E4,e4@example.com,,',
        'E5,e5@example.com,inactive,31-12-2030', // the status column still counts
        'E6,e6@example.com,active,31-12-1999',
      ].join('\n'),
    );
    const result = await readFeed(at, { leaverRule: { column: 'End Date', dateFormat: 'd-M-yyyy' }, today: '2025-06-15' });
    expect(result.errors).toEqual([]);
    expect(result.rows.map((r) => [r.employeeId, r.status])).toEqual([
      ['E1', 'inactive'],
      ['E2', 'active'],
      ['E3', 'active'],
      ['E4', 'active'],
      ['E5', 'inactive'],
      ['E6', 'inactive'],
    ]);
    // The end date is HR data like any other column: kept as an attribute.
    expect(result.rows.at(0)!.attributes).toEqual({ 'End Date': '14-6-2025' });
    expect(result.rows.at(3)!.attributes).toBeUndefined();
  });

  it('rejects a bad date as a row error naming line, field and fix, and protects the employee', async () => {
    const at = await file('end-bad.csv', [header, 'E1,e1@example.com,,1-1-2031', 'E2,e2@example.com,,31-2-2025', 'E3,e3@example.com,,2025-01-31'].join('\n'));
    const result = await readFeed(at, { leaverRule: { column: 'End Date', dateFormat: 'd-M-yyyy' }, today: '2025-06-15' });
    expect(result.rows.map((r) => r.employeeId)).toEqual(['E1']);
    expect(result.errors.map((e) => [e.line, e.field, e.value])).toEqual([
      [3, 'end_date', '31-2-2025'],
      [4, 'end_date', '2025-01-31'],
    ]);
    expect(result.errors[0]!.message).toBe(
      'end-bad.csv line 3, field end_date (column "End Date"): "31-2-2025" is not a date written d-M-yyyy (e.g. 5-3-2024), or names a day that does not exist; ' +
        `fix the date in the HR export (or the profile's "leaverRule.dateFormat") or drop the row`,
    );
    expect([...result.invalidEmployeeIds].sort()).toEqual(['E2', 'E3']);
  });

  it('refuses a file without the end-date column, since leavers would be missed', async () => {
    const at = await file('end-missing.csv', 'employee_id,email\nE1,e1@example.com\n');
    const result = await readFeed(at, { leaverRule: { column: 'End Date', dateFormat: 'd-M-yyyy' } });
    expect([...result.rows]).toEqual([]);
    expect(result.fileErrors[0]).toContain('end-missing.csv line 1: the header has no column "End Date", named as the end date');
  });

  it('parses the usual formats strictly', () => {
    expect(compileDateFormat('yyyy-MM-dd').parse('2024-03-05')).toBe('2024-03-05');
    expect(compileDateFormat('yyyy-MM-dd').parse('2024-3-5')).toBeUndefined();
    expect(compileDateFormat('dd/MM/yyyy').parse(' 05/03/2024 ')).toBe('2024-03-05');
    expect(compileDateFormat('dd/MM/yyyy').parse('5/3/2024')).toBeUndefined();
    expect(compileDateFormat('d-M-yyyy').parse('5-3-2024')).toBe('2024-03-05');
    expect(compileDateFormat('d-M-yyyy').parse('29-2-2024')).toBe('2024-02-29');
    expect(compileDateFormat('d-M-yyyy').parse('29-2-2023')).toBeUndefined();
    expect(compileDateFormat('d.M.yyyy').parse('5-3-2024')).toBeUndefined();
    expect(() => compileDateFormat('d-M-yy')).toThrow(/not a date token/);
    expect(() => compileDateFormat('d-M')).toThrow(/has no year/);
  });

  it('reads the end date from JSON Lines too', async () => {
    const at = await file('end.jsonl', '{"employee_id":"J1","email":"j1@example.com","leaves":"2020-01-31","dept":"Ops"}\n{"employee_id":"J2","email":"j2@example.com","leaves":null}\n');
    const result = await readFeed(at, { leaverRule: { column: 'leaves', dateFormat: 'yyyy-MM-dd' }, today: '2025-06-15', attributes: ['dept'] });
    expect(result.rows.map((r) => [r.employeeId, r.status, r.attributes])).toEqual([
      ['J1', 'inactive', { dept: 'Ops' }],
      ['J2', 'active', undefined],
    ]);
  });
});

describe('attributes', () => {
  const text = 'employee_id,email,Department,Manager,Location\nE1,e1@example.com,Finance,E9,\n';

  it('keeps every unmapped column by default, leaving empty cells out', async () => {
    const result = await readFeed(await file('attrs.csv', text));
    expect(result.rows.at(0)!.attributes).toEqual({ Department: 'Finance', Manager: 'E9' });
    expect(result.reading?.attributes?.map((a) => a.name)).toEqual(['Department', 'Manager', 'Location']);
  });

  it('keeps only the listed columns, or none', async () => {
    const at = await file('attrs2.csv', text);
    expect((await readFeed(at, { attributes: ['Department'] })).rows.at(0)!.attributes).toEqual({ Department: 'Finance' });
    expect((await readFeed(at, { attributes: 'none' })).rows.at(0)!.attributes).toBeUndefined();
  });

  it('renames kept columns to stable attribute names', async () => {
    const profile = parseFeedProfile('{"attributes": {"department": "Department", "manager": "Manager", "site": "Location"}}', 'p.json');
    const result = await readFeed(await file('attrs-renamed.csv', text), feedReadOptions(profile));
    expect(result.rows.at(0)!.attributes).toEqual({ department: 'Finance', manager: 'E9' });
    expect(result.reading?.attributes).toEqual([
      { name: 'department', column: 'Department' },
      { name: 'manager', column: 'Manager' },
      { name: 'site', column: 'Location' },
    ]);
  });

  it('refuses a listed column the header does not have', async () => {
    const result = await readFeed(await file('attrs3.csv', text), { attributes: ['Department', 'Cost Centre'] });
    expect(result.fileErrors[0]).toMatch(/^attrs3\.csv line 1: the header has no column "Cost Centre", named as an attribute/);
  });
});

describe('profile validation', () => {
  it('accepts a full profile', () => {
    const p = parseFeedProfile(
      JSON.stringify({
        description: 'x',
        format: 'csv',
        delimiter: 'tab',
        encoding: 'UTF-16LE',
        columns: { employee_id: 'Id', email: 'Mail' },
        statusMap: { Gone: 'inactive' },
        leaverRule: { column: 'End', dateFormat: 'dd/MM/yyyy' },
        attributes: ['Dept'],
      }),
      'p.json',
    );
    expect(p).toMatchObject({ format: 'csv', delimiter: '\t', encoding: 'utf-16le', leaverRule: { column: 'End', dateFormat: 'dd/MM/yyyy' }, attributes: ['Dept'] });
    expect([...p.map]).toEqual([
      ['employee_id', 'Id'],
      ['email', 'Mail'],
    ]);
    expect([...p.statusMap]).toEqual([['gone', 'inactive']]);
  });

  it('names the file, the key and the fix for an unknown key', () => {
    expect(problemsOf('{"delimeter": ";"}', 'hr.json')).toEqual([
      'profile hr.json, key "delimeter": not a profile key; did you mean "delimiter"? fix: rename it to "delimiter"',
    ]);
    expect(problemsOf('{"status_map": {}}')).toEqual(['profile p.json, key "status_map": not a profile key; fix: rename it to "statusMap"']);
    // Far from every key: no guess.
    expect(problemsOf('{"zzz": 1}')).toEqual(['profile p.json, key "zzz": not a profile key; fix: remove it; profile keys: description, format, delimiter, encoding, columns, statusMap, leaverRule, attributes']);
    expect(problemsOf('{"columns": {"mail": "E-mail"}}')[0]).toMatch(/^profile p\.json, key "columns\.mail": "mail" is not a feed field; fix: write "columns": .*feed fields: employee_id, email/);
  });

  it('names the key and the fix for a wrong type or value, listing every problem', () => {
    const problems = problemsOf('{"delimiter": ":", "statusMap": {"Gone": "left"}, "attributes": 3, "leaverRule": {"column": "End", "dateFormat": "d-M-yy"}, "format": 1}');
    expect(problems).toHaveLength(5);
    expect(problems).toContain('profile p.json, key "format": must be "csv" or "jsonl"; fix: write "format": "csv" or "jsonl" (or leave it out: the file extension decides)');
    expect(problems.find((p) => p.includes('key "delimiter"'))).toMatch(/": ":" is not a delimiter trainsync reads; fix: write "delimiter": one of/);
    expect(problems.find((p) => p.includes('key "statusMap.Gone"'))).toMatch(/must be "active" or "inactive"; fix: write "statusMap"/);
    expect(problems.find((p) => p.includes('key "attributes"'))).toMatch(/must be "all", "none", a list of headers or an object of attribute name → header; fix:/);
    expect(problems.find((p) => p.includes('key "leaverRule.dateFormat"'))).toMatch(/"d-M-yy" has "y", which is not a date token.*; fix: write "leaverRule"/);
  });

  it('refuses two spellings of one status word with different meanings, and bad JSON', () => {
    expect(problemsOf('{"statusMap": {"On Leave": "active", "on  leave": "inactive"}}')[0]).toContain('key "statusMap.on  leave": the same word as "On Leave"');
    expect(problemsOf('{"format": "csv",}')[0]).toMatch(/^profile p\.json: not valid JSON \(.+\); fix: write one JSON object/);
    expect(problemsOf('[1]')[0]).toMatch(/^profile p\.json: must be a JSON object; fix:/);
  });

  it('names a profile file that cannot be read', async () => {
    await expect(loadFeedProfile(path.join(dir, 'nope.json'))).rejects.toThrow(/^cannot read profile .*nope\.json: ENOENT/);
  });
});

/** Text as single bytes: ASCII as it is, and `\xNN` escapes as the byte NN (how a Windows export is on disk). */
function bytes(text: string): Buffer {
  return Buffer.from([...text].map((c) => c.charCodeAt(0)));
}

describe('Windows-1252 and ISO-8859-1 exports', () => {
  // 0xEB ë, 0xFC ü in both; 0x80 € and 0x92 ’ in Windows-1252 only (control codes in ISO-8859-1).
  const export1252 = bytes('employee_id,email,first_name,last_name,status,Notes\nE1,zoe@example.com,Zo\xeb,M\xfcller,active,\x80 5 \x92s\nE2,ann@example.com,Ann,Smith,active,\n');

  it.each(['windows-1252', 'cp1252', 'CP-1252', 'Windows1252', 'win1252'])('reads "Zoë Müller" and "€ 5 ’s" with "encoding": "%s"', async (name) => {
    const at = await file('zoe-1252.csv', export1252);
    const result = await readFeed(at, feedReadOptions(parseFeedProfile(JSON.stringify({ encoding: name }), 'p.json')));
    expect(result.fileErrors).toEqual([]);
    expect(result.rows.map((r) => [r.line, r.firstName, r.lastName, r.attributes?.Notes])).toEqual([
      [2, 'Zoë', 'Müller', '€ 5 ’s'],
      [3, 'Ann', 'Smith', undefined],
    ]);
    expect(result.reading).toMatchObject({ encoding: 'windows-1252', encodingSource: 'profile' });
  });

  it.each(['iso-8859-1', 'latin1', 'Latin-1', 'ISO8859-1'])('reads ISO-8859-1 with "encoding": "%s" (0x80-0x9F are control codes there)', async (name) => {
    const at = await file('zoe-latin1.csv', export1252);
    const result = await readFeed(at, feedReadOptions(parseFeedProfile(JSON.stringify({ encoding: name }), 'p.json')));
    expect(result.fileErrors).toEqual([]);
    expect(result.rows.map((r) => [r.firstName, r.lastName, r.attributes?.Notes])).toEqual([
      ['Zoë', 'Müller', '\u0080 5 \u0092s'],
      ['Ann', 'Smith', undefined],
    ]);
    expect(result.reading).toMatchObject({ encoding: 'iso-8859-1', encodingSource: 'profile' });
  });

  it('reads JSON Lines in Windows-1252 too', async () => {
    const at = await file('zoe-1252.jsonl', bytes('{"employee_id": "J1", "email": "zoe@example.com", "first_name": "Zo\xeb", "last_name": "M\xfcller"}\n'));
    const result = await readFeed(at, { encoding: 'windows-1252' });
    expect(result.fileErrors).toEqual([]);
    expect(result.rows.map((r) => [r.firstName, r.lastName])).toEqual([['Zoë', 'Müller']]);
  });

  it('without the setting, refuses the file naming line, byte and offset, and suggests "encoding": "windows-1252"', async () => {
    const at = await file('zoe-default.csv', export1252);
    const result = await readFeed(at);
    expect([...result.rows]).toEqual([]);
    // Line 2 starts at offset 52 (the header's 51 bytes and its LF), then "E1,zoe@example.com,Zo" (21 bytes): 0xEB is its 22nd.
    expect(result.fileErrors).toEqual([
      'zoe-default.csv line 2, byte 22 (offset 73 in the file): the byte 0xEB is not valid UTF-8 here (the file has no UTF-16 byte-order mark, so it is read as UTF-8), ' +
        'so the text cannot be read; nothing was planned: if the export is Windows-1252 or Latin-1 (there 0xEB is "ë"), as many HR systems on Windows write it, ' +
        'put "encoding": "windows-1252" in a feed profile (--profile FILE.json); or save the export as UTF-8',
    ]);
    // A profile that says UTF-8 is told to change it.
    const said = await readFeed(at, feedReadOptions(parseFeedProfile('{"encoding": "utf-8"}', 'p.json')));
    expect(said.fileErrors[0]).toMatch(/the profile's "encoding" says UTF-8\), .*change the profile's "encoding" to "windows-1252"; or save the export as UTF-8$/);
  });

  it('names a byte Windows-1252 does not define, and suggests ISO-8859-1', async () => {
    const at = await file('undefined-1252.csv', bytes('employee_id,email,first_name\nE1,a@example.com,X\x81\n'));
    const result = await readFeed(at, { encoding: 'windows-1252' });
    expect(result.fileErrors).toEqual([
      'undefined-1252.csv line 2, byte 19 (offset 47 in the file): the byte 0x81 is not valid Windows-1252 here ' +
        '(the file has no byte-order mark and the profile\'s "encoding" says Windows-1252), so the text cannot be read; nothing was planned: ' +
        'bytes 0x81, 0x8D, 0x8F, 0x90 and 0x9D are no Windows-1252 character: if the export is Latin-1, put "encoding": "iso-8859-1" in the feed profile, or save the export as UTF-8',
    ]);
    expect((await readFeed(at, { encoding: 'iso-8859-1' })).rows.map((r) => r.firstName)).toEqual(['X\u0081']);
  });

  it('a UTF-8 byte-order mark still wins over "encoding": "windows-1252"', async () => {
    const at = await file('bom-utf8.csv', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('employee_id,email,first_name\nE1,a@example.com,Zoë\n')]));
    const result = await readFeed(at, { encoding: 'windows-1252' });
    expect(result.rows.map((r) => r.firstName)).toEqual(['Zoë']);
    expect(result.reading).toMatchObject({ encoding: 'utf-8', encodingSource: 'bom' });
  });

  it('refuses an encoding it does not read, listing the ones it does', () => {
    expect(problemsOf('{"encoding": "ebcdic"}')).toEqual([
      'profile p.json, key "encoding": "ebcdic" is not an encoding trainsync reads; fix: write "encoding": "utf-8" (default), "utf-16le", "utf-16be", ' +
        '"windows-1252" (or "cp1252") or "iso-8859-1" (or "latin1"), as the HR system exports it (a file with a byte-order mark is read by its mark whatever this says)',
    ]);
  });
});

describe('command line over profile', () => {
  it('replaces the format, and the column of each field given with --map', async () => {
    const profile = parseFeedProfile('{"format": "jsonl", "columns": {"employee_id": "Id", "email": "Work Email"}}', 'p.json');
    const options = feedReadOptions(profile, { format: 'csv', map: parseColumnMap('email=Mail') });
    expect(options.format).toBe('csv');
    expect([...options.map!]).toEqual([
      ['employee_id', 'Id'],
      ['email', 'Mail'],
    ]);
    const at = await file('override.jsonl', 'Id,Mail,Work Email\nE1,right@example.com,wrong@example.com\n');
    const result = await readFeed(at, options);
    expect(result.fileErrors).toEqual([]);
    expect(result.rows.map((r) => [r.employeeId, r.email, r.attributes])).toEqual([['E1', 'right@example.com', { 'Work Email': 'wrong@example.com' }]]);
    // Without the command line, the profile's format and columns hold.
    expect((await readFeed(at, feedReadOptions(profile))).errors[0]!.code).toBe('invalid-json');
  });

  it('reads a BOM-less UTF-16 file when the profile says so; a BOM still wins', async () => {
    const text = 'employee_id,email,first_name\nE1,e1@example.com,Zoë\n';
    const at = await file('utf16.csv', Buffer.from(text, 'utf16le'));
    const result = await readFeed(at, feedReadOptions(parseFeedProfile('{"encoding": "utf-16le"}', 'p.json')));
    expect(result.rows.map((r) => r.firstName)).toEqual(['Zoë']);
    expect(result.reading?.encoding).toBe('utf-16le');
    const withBom = await file('utf8bom.csv', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(text)]));
    expect((await readFeed(withBom, { encoding: 'utf-16le' })).rows.map((r) => r.firstName)).toEqual(['Zoë']);
    // Without the profile, the same bytes are not UTF-8 text with those headers.
    expect([...(await readFeed(at)).rows]).toEqual([]);
  });
});

describe('trainsync feed check', () => {
  let env: Record<string, string>;
  beforeAll(async () => {
    // Nothing listens on either: the command must not need them.
    env = {
      REDIS_URL: `redis://127.0.0.1:${await freePort()}`,
      DATABASE_URL: 'postgres://postgres@no-such-host.invalid:5432/nothing',
    };
  });

  it('shows counts and the mapped rows of the semicolon example, touching no service', async () => {
    const run = await runCli(['feed', 'check', 'examples/semicolon-export.csv', '--profile', 'examples/semicolon-profile.json', '--rows', '3'], env);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('examples/semicolon-export.csv (profile examples/semicolon-profile.json): csv, delimiter ";", read as UTF-8 (its byte-order mark), 13 lines');
    expect(run.stdout).toContain('records: 12; valid: 12 (10 active, 2 inactive); rejected: 0');
    expect(run.stdout).toContain(
      'attributes kept: department ← "Afdeling", manager ← "Leidinggevende", location ← "Locatie", hire_date ← "Datum in dienst", end_date ← "Datum uit dienst"',
    );
    expect(run.stdout).toContain('first 3 rows as read:');
    // P2003 left on 31-1-2024: inactive by the end-date rule.
    // The name wraps to fit 100 columns; the attributes are listed under the table.
    expect(run.stdout).toMatch(/│ 4 +│ P2003 +│ chantal\.bakker@acme-training\.example +│ Chantal +│ inactive /);
    expect(run.stdout).toContain('line 4: department=Logistiek; manager=P2010; location=Rotterdam; hire_date=7-1-2016; end_date=31-1-2024');
    expect(run.stdout).not.toContain('P2004');

    const json = await runCli(['feed', 'check', 'examples/workday-export.csv', '--profile', 'examples/workday-profile.json', '--json', '--rows', '20'], env);
    expect(json.code).toBe(0);
    const report = JSON.parse(json.stdout) as { counts: Record<string, number>; rows: { employeeId: string; status: string; attributes: Record<string, string> }[] };
    expect(report.counts).toEqual({ lines: 13, records: 12, valid: 12, rejected: 0, active: 8, inactive: 4 });
    expect(report.rows.find((r) => r.employeeId === 'W10012')!.attributes.department).toBe('Research, Data & AI');
    expect(report.rows.filter((r) => r.status === 'inactive').map((r) => r.employeeId)).toEqual(['W10004', 'W10005', 'W10006', 'W10011']);
  });

  it('lists row errors with exit 1, and refuses a bad profile naming file, key and fix with exit 2', async () => {
    const feed = await file('check.csv', 'employee_id;email;status\nE1;e1@example.com;active\nE2;bad@;active\n');
    const rows = await runCli(['feed', 'check', feed], env);
    expect(rows.code).toBe(1);
    expect(rows.stdout).toContain('records: 2; valid: 1 (1 active, 0 inactive); rejected: 1');
    expect(rows.stdout).toContain('row error: check.csv line 3, field email: "bad@" is not an e-mail address; fix the value in the HR export or drop the row');

    const profile = await file('bad-profile.json', '{"columns": {"employee_id": "Id"}, "delimter": ";"}');
    const bad = await runCli(['feed', 'check', feed, '--profile', profile], env);
    expect(bad.code).toBe(2);
    expect(stderrSaid(bad.stderr)).toContain(`profile ${profile}, key "delimter": not a profile key; did you mean "delimiter"? fix: rename it to "delimiter"`);
    expect(bad.stdout).toBe('');
  });
  it('names the encoding it read the file with; a Windows-1252 export without the setting fails with the fix', async () => {
    const feed = await file('hr-1252.csv', bytes('employee_id,email,first_name,last_name\nE1,zoe@example.com,Zo\xeb,M\xfcller\n'));
    const profile = await file('hr-1252.json', '{"encoding": "windows-1252"}');
    const read = await runCli(['feed', 'check', feed, '--profile', profile], env);
    expect(read.stderr).toBe('');
    expect(read.code).toBe(0);
    expect(read.stdout.split('\n')[0]).toBe(`${feed} (profile ${profile}): csv, delimiter "," (detected), read as Windows-1252 (the profile's "encoding"), 2 lines`);
    expect(read.stdout).toMatch(/│ 2 +│ E1 +│ zoe@example\.com +│ Zoë Müller +│/);
    const json = JSON.parse((await runCli(['feed', 'check', feed, '--profile', profile, '--json'], env)).stdout) as { reading: Record<string, unknown> };
    expect(json.reading).toMatchObject({ encoding: 'windows-1252', encodingSource: 'profile' });

    const refused = await runCli(['feed', 'check', feed], env);
    expect(refused.code).toBe(2);
    expect(refused.stdout.split('\n')[0]).toBe(`${feed}: csv, delimiter "," (detected), read as UTF-8 (the default), 1 lines`);
    expect(refused.stdout).toContain(
      'FILE ERROR: hr-1252.csv line 2, byte 22 (offset 60 in the file): the byte 0xEB is not valid UTF-8 here',
    );
    expect(refused.stdout).toContain('(there 0xEB is "ë"), as many HR systems on Windows write it, put "encoding": "windows-1252" in a feed profile (--profile FILE.json)');
  });
});

import { describe, expect, it } from 'vitest';
import { checkEnvelope, checkOrParse, checkResult, fastCheckFor } from '../src/platform/fast-checks.ts';
import { validateEntities } from '../src/platform/paginate.ts';
import { envelopeSchema, resultSchema } from '../src/platform/schemas.ts';

/**
 * The fast checks stand in front of zod on the hot path: whatever they accept, zod must
 * accept with the same output, and whatever zod refuses they must leave to zod. They
 * never change their input. Checked over the field values a page may carry, one at a
 * time and in pseudo-random mixes.
 */

const ID = 'abcdef01-2345-6789-abcd-ef0123456789';

/** Values each field may take, valid and invalid, canonical and not. */
const RESULT_FIELDS: Record<string, unknown[]> = {
  id: [ID, ID.toUpperCase(), `{${ID}}`, ID.replaceAll('-', ''), 'not-a-guid', 7, null, undefined, `${ID} `],
  userId: [ID, 'ABCDEF01-2345-6789-ABCD-EF012345678Z', undefined],
  courseId: [ID, ''],
  multiCourseResultId: [undefined, null, ID, ID.toUpperCase(), 'x', 3],
  isComplete: [true, false, 'true', undefined, null],
  dateCompleted: [
    undefined,
    null,
    '2024-03-01T10:00:00.123Z',
    '2024-02-29T23:59:59.999Z',
    '2023-02-29T10:00:00.000Z',
    '2024-02-30T10:00:00.123Z',
    '2024-01-01T24:00:00.000Z',
    '2024-01-01T23:60:00.000Z',
    '2024-01-01T23:59:60.000Z',
    '2024-13-01T10:00:00.000Z',
    '2024-00-10T10:00:00.000Z',
    '2024-04-31T10:00:00.000Z',
    '2000-02-29T10:00:00.000Z',
    '1900-02-29T10:00:00.000Z',
    '2024-03-01T10:00:00.123z',
    '2024-03-01t10:00:00.123Z',
    '2024-03-01T10:00:00.12Z',
    '2024-03-01T10:00:00',
    '2024-03-01 10:00:00.1234567+00:00',
    '2024-03-01T10:00:00.5+0200',
    '2024-03-01T10:00Z',
    ' 2024-03-01T10:00:00.123Z',
    '2024-03-01T10:00:00.123Z ',
    '２024-03-01T10:00:00.123Z',
    'yesterday',
    1709287200000,
  ],
  score: [undefined, null, 0, 7, -0, 1.5, '7', 2 ** 53, Number.MAX_SAFE_INTEGER],
  maximumScore: [undefined, 10, 10.25],
  passRate: [undefined, null, 70, true],
  courseType: [undefined, null, 'SINGLE_COURSE', '', 1],
  resultFilters: [undefined, null, [], [ID], [ID, ID.toUpperCase()], [ID.toUpperCase()], ['x'], [ID, 1], 'x', [null]],
  extraVendorField: [undefined, 'kept', { nested: [1, 'two'] }],
};

/** Every value of every field against the base record, then pseudo-random mixes of them. */
function* resultCorpus(): Generator<unknown> {
  const base: Record<string, unknown> = { id: ID, userId: ID, courseId: ID, isComplete: true, dateCompleted: '2024-03-01T10:00:00.123Z', score: 7 };
  for (const [field, values] of Object.entries(RESULT_FIELDS)) {
    for (const value of values) {
      const record = { ...base };
      if (value === undefined) delete record[field];
      else record[field] = value;
      yield record;
    }
  }
  let seed = 12345;
  const next = (n: number): number => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  for (let i = 0; i < 3000; i++) {
    const record: Record<string, unknown> = {};
    for (const [field, values] of Object.entries(RESULT_FIELDS)) {
      // Mostly the first (valid) values, so that many mixes pass.
      const value = next(3) === 0 ? values[next(values.length)] : values[next(Math.min(3, values.length))];
      if (value !== undefined) record[field] = value;
    }
    yield record;
  }
  yield null;
  yield 'junk';
  yield [base];
  yield 42;
}

function* envelopeCorpus(): Generator<unknown> {
  const link = { type: 'Next Page', href: 'http://h/api/v2/results?page=2', method: 'GET' };
  const base = { entities: [{ id: ID }], page: 1, entitiesReturned: 1, totalEntities: 9, links: [link] };
  const variants: Record<string, unknown[]> = {
    entities: [[], [1, 'x', null], undefined, null, 'x', {}],
    page: [undefined, 0, 1, 2.5, '1', null],
    entitiesReturned: [undefined, 0, -1, null],
    totalEntities: [undefined, 0, -1, 2 ** 53, null],
    links: [undefined, null, [], [link], [{ type: 'Next Page', href: 'x' }], [{ type: 'Next Page' }], [{ type: 1, href: 'x' }], [{ type: 'x', href: 'y', method: null }], 'x', [null]],
    extra: [undefined, { a: 1 }],
  };
  for (const [field, values] of Object.entries(variants)) {
    for (const value of values) {
      const envelope: Record<string, unknown> = { ...base };
      if (value === undefined) delete envelope[field];
      else envelope[field] = value;
      yield envelope;
    }
  }
  yield null;
  yield [];
}

function agreeWithZod(check: (raw: unknown) => unknown, schema: typeof resultSchema | typeof envelopeSchema, corpus: Iterable<unknown>): { accepted: number; declined: number } {
  let accepted = 0;
  let declined = 0;
  for (const value of corpus) {
    const zod = schema.safeParse(structuredClone(value));
    const input = structuredClone(value);
    const fast = check(input);
    // The input is left exactly as the platform sent it, accepted or not.
    expect(input).toEqual(value);
    if (fast === undefined) {
      declined += 1;
    } else {
      accepted += 1;
      expect(zod.success, JSON.stringify(value)).toBe(true);
      // Same fields, same values, same order as zod's output.
      expect(fast).toEqual(zod.data);
      expect(JSON.stringify(fast)).toBe(JSON.stringify(zod.data));
    }
    // With zod behind it, the answer is zod's in every case.
    const both = checkOrParse(schema as never, check as never, structuredClone(value));
    expect(both.success).toBe(zod.success);
    if (zod.success) expect(both.data).toEqual(zod.data);
  }
  return { accepted, declined };
}

describe('fast checks in front of zod', () => {
  it('accept only results zod accepts, with the same output, and leave the rest untouched for zod', () => {
    const { accepted, declined } = agreeWithZod(checkResult, resultSchema, resultCorpus());
    // The corpus exercises both sides.
    expect(accepted).toBeGreaterThan(150);
    expect(declined).toBeGreaterThan(300);
  });

  it('accept the usual forms without zod: canonical and upper-case GUIDs, the spec timestamps, absent optional fields', () => {
    const record = { id: ID.toUpperCase(), userId: ID, courseId: ID, isComplete: false, dateCompleted: '2024-03-01T10:00:00.5+0200', resultFilters: [`{${ID}}`] };
    expect(checkResult(record)).toEqual({
      id: ID,
      userId: ID,
      courseId: ID,
      multiCourseResultId: null,
      isComplete: false,
      dateCompleted: '2024-03-01T10:00:00.500000+02:00',
      score: null,
      maximumScore: null,
      passRate: null,
      courseType: null,
      resultFilters: [ID],
    });
  });

  it('accept only envelopes zod accepts, with the same output', () => {
    const { accepted, declined } = agreeWithZod(checkEnvelope, envelopeSchema, envelopeCorpus());
    expect(accepted).toBeGreaterThan(5);
    expect(declined).toBeGreaterThan(5);
  });

  it('stand in front of exactly the result and envelope schemas', () => {
    expect(fastCheckFor(resultSchema)).toBe(checkResult);
    expect(fastCheckFor(envelopeSchema)).toBe(checkEnvelope);
  });

  it('keep the per-record outcome of a page: good records with their unknown fields, bad ones quarantined raw with zod’s message', () => {
    const vendorAdded = { a: 1 };
    const good = { id: ID, userId: ID, courseId: ID, isComplete: true, vendorAdded };
    const bad = { id: ID, userId: ID, courseId: ID, isComplete: true, dateCompleted: '2024-02-30T10:00:00.000Z' };
    const { records, problems } = validateEntities('results', 3, [good, bad], resultSchema);
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({ id: ID, dateCompleted: null });
    // Unknown fields are carried over as they are, not cloned.
    expect(records[0]!.vendorAdded).toBe(vendorAdded);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatchObject({ index: 1, page: 3, raw: bad });
    expect(problems[0]!.message).toMatch(/^dateCompleted: not a timestamp/);
  });
});

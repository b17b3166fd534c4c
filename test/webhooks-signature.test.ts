import { createHmac, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.ts';
import { planEvent } from '../src/webhooks/events.ts';
import { parseWebhookSecrets } from '../src/settings/webhook-secrets.ts';
import { signatureHeaderMatcher, signatureHeaderValues, verifySignature } from '../src/webhooks/signature.ts';

/** Signatures, secrets and event shapes: pure functions, no services. */

const secret = randomBytes(32).toString('base64');
const key = Buffer.from(secret, 'base64');
const body = Buffer.from(JSON.stringify({ eventId: 'e1', eventType: 'COURSE_COMPLETE', data: { resultId: 'x' } }));
const hmac = (data: Buffer, k: Buffer = key): Buffer => createHmac('sha256', k).update(data).digest();

describe('verifySignature', () => {
  it('accepts the HMAC-SHA256 of the raw body in base64, URL-safe base64 and hex (either case, sha256= prefix)', () => {
    const digest = hmac(body);
    for (const value of [
      digest.toString('base64'),
      digest.toString('base64url'),
      digest.toString('hex'),
      digest.toString('hex').toUpperCase(),
      `sha256=${digest.toString('hex')}`,
    ]) {
      expect(verifySignature(body, [value], [key]), value).toBe('valid');
    }
  });

  it('refuses a signature of another body, under another key, truncated or garbled, in both encodings', () => {
    const other = hmac(Buffer.concat([body, Buffer.from(' ')]));
    const wrongKey = hmac(body, randomBytes(32));
    const digest = hmac(body);
    for (const value of [
      other.toString('base64'),
      other.toString('hex'),
      wrongKey.toString('base64'),
      wrongKey.toString('hex'),
      digest.toString('hex').slice(0, 62),
      digest.toString('base64').slice(0, 20),
      'not a signature',
      digest.toString('hex').replace(/^./, 'g'),
    ]) {
      expect(verifySignature(body, [value], [key]), value).toBe('invalid');
    }
  });

  it('says missing when no header, or only an empty one, was sent', () => {
    expect(verifySignature(body, [], [key])).toBe('missing');
    expect(verifySignature(body, ['  '], [key])).toBe('missing');
  });

  it('accepts any of several secrets (one per webhook) and any of several signatures in the header', () => {
    const second = randomBytes(24);
    expect(verifySignature(body, [hmac(body, second).toString('base64')], [key, second])).toBe('valid');
    expect(verifySignature(body, [`bogus, ${hmac(body).toString('hex')}`], [key])).toBe('valid');
    expect(verifySignature(body, ['bogus', hmac(body).toString('base64')], [key])).toBe('valid');
  });
});

describe('the signature header', () => {
  it('by default is any header named …-Signature, in any case; a set name is matched exactly', () => {
    const any = signatureHeaderMatcher('*-Signature');
    expect(any('Acme-Signature')).toBe(true);
    expect(any('platform-signature')).toBe(true);
    expect(any('-Signature')).toBe(false);
    expect(any('Signature')).toBe(false);
    expect(any('X-Signature-Key')).toBe(false);
    const exact = signatureHeaderMatcher('Acme-Signature');
    expect(exact('acme-signature')).toBe(true);
    expect(exact('Other-Signature')).toBe(false);
    expect(signatureHeaderValues(['Host', 'x', 'Acme-Signature', 'a', 'Other-Signature', 'b'], exact)).toEqual(['a']);
    expect(signatureHeaderValues(['Host', 'x', 'Acme-Signature', 'a', 'Other-Signature', 'b'], any)).toEqual(['a', 'b']);
  });
});

describe('TRAINSYNC_WEBHOOK_SECRET', () => {
  it('decodes base64 text, one secret or a comma-separated list', () => {
    const other = randomBytes(20).toString('base64');
    const keys = parseWebhookSecrets(` ${secret} , ${other} `);
    expect(Array.isArray(keys) && keys.map((k) => k.toString('base64'))).toEqual([secret, other]);
  });

  it('refuses text that is not base64 or too short, and never prints the value', () => {
    expect(parseWebhookSecrets('not base64!')).toMatch(/base64 text/);
    expect(parseWebhookSecrets('c2hvcnQ=')).toMatch(/at least 16 bytes/);
    const bad = 'hunter2-but-not-base64!!';
    let error: unknown;
    try {
      loadConfig({ TRAINSYNC_WEBHOOK_SECRET: bad });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect(String(error)).toMatch(/TRAINSYNC_WEBHOOK_SECRET: set but invalid/);
    expect(String(error)).not.toContain(bad);
  });

  it('leaves the receiver off when unset, and documents the header default', () => {
    const config = loadConfig({});
    expect(config.TRAINSYNC_WEBHOOK_SECRET).toBeUndefined();
    expect(config.TRAINSYNC_WEBHOOK_SIGNATURE_HEADER).toBe('*-Signature');
    expect(config.TRAINSYNC_WEBHOOK_PORT).toBe(9465);
    expect(() => loadConfig({ TRAINSYNC_WEBHOOK_SIGNATURE_HEADER: 'two words' })).toThrow(/TRAINSYNC_WEBHOOK_SIGNATURE_HEADER/);
  });
});

describe('planEvent', () => {
  const guid = '0E1F2A3B-4C5D-4E6F-8A9B-0C1D2E3F4A5B';
  const envelope = (eventType: string, data: unknown) => ({ eventId: 'e', eventType, data });

  it('names the result of a COURSE_COMPLETE, with or without the newer fields', () => {
    expect(planEvent(envelope('COURSE_COMPLETE', { resultId: guid, completionTime: '2024-05-01T10:00:00.1234567+00:00', passed: true }))).toEqual({
      kind: 'load',
      resultIds: [guid.toLowerCase()],
    });
    expect(planEvent(envelope('COURSE_COMPLETE', { resultId: guid, userId: guid, courseId: guid, score: 5, maxScore: 10, passRate: null }))).toEqual({
      kind: 'load',
      resultIds: [guid.toLowerCase()],
    });
  });

  it('names the parent and each child of a MULTI_COURSE_COMPLETE once', () => {
    const child = '11111111-2222-4333-8444-555555555555';
    expect(planEvent(envelope('MULTI_COURSE_COMPLETE', { resultId: guid, childResultIds: [child, child.toUpperCase()] }))).toEqual({
      kind: 'load',
      resultIds: [guid.toLowerCase(), child],
    });
  });

  it('has nothing to load for TEST_EVENT, unknown types and unusable data', () => {
    expect(planEvent(envelope('TEST_EVENT', null))).toEqual({ kind: 'done', outcome: 'test' });
    expect(planEvent(envelope('USER_CREATED', { userId: guid }))).toEqual({ kind: 'done', outcome: 'unknown-type' });
    expect(planEvent(envelope('COURSE_COMPLETE', { resultId: 'nope' }))).toMatchObject({ kind: 'done', outcome: 'invalid', error: expect.stringMatching(/resultId/) });
    expect(planEvent(envelope('MULTI_COURSE_COMPLETE', { resultId: guid }))).toMatchObject({ kind: 'done', outcome: 'invalid' });
  });
});

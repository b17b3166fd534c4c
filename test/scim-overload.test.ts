import { owner } from './helpers/owner.ts';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ORG_EMAIL_DOMAIN } from '../src/simulator/index.ts';
import { createScimHarness, type ScimHarness } from './helpers/scim-harness.ts';

/**
 * Past TRAINSYNC_SCIM_MAX_IN_FLIGHT requests being worked on, the endpoint answers 429 with
 * Retry-After (identity providers back off on it) instead of queueing without bound; the
 * refused request records nothing, and the one in flight is answered as usual.
 */

const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
let h: ScimHarness;

beforeAll(async () => {
  h = await createScimHarness({ simulator: { seed: 32 }, env: { TRAINSYNC_SCIM_MAX_IN_FLIGHT: '1' } });
});
afterAll(async () => {
  await h?.close();
});

/** A POST whose body is held back: in flight until `finish` is called. */
function heldPost(path: string, body: string): { finish(): Promise<{ status: number; text: string }> } {
  const url = new URL(`${h.base}${path}`);
  const req = http.request({ host: url.hostname, port: url.port, path: url.pathname, method: 'POST', headers: { authorization: `Bearer ${h.token}`, 'content-type': 'application/scim+json', 'content-length': Buffer.byteLength(body) } });
  const answered = new Promise<{ status: number; text: string }>((resolve, reject) => {
    req.on('response', (res) => {
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
  });
  req.write(body.slice(0, 10));
  return {
    finish() {
      req.end(body.slice(10));
      return answered;
    },
  };
}

describe('the in-flight limit', () => {
  it('a request past it gets 429 with Retry-After and the SCIM error body; the held one is then answered 201', async () => {
    const email = `held.create${ORG_EMAIL_DOMAIN}`;
    const held = heldPost('/Users', JSON.stringify({ schemas: [USER], userName: email, name: { givenName: 'Held', familyName: 'Create' } }));
    // The held POST counts once its headers have arrived: poll until a second request meets the limit.
    let refused: Response | undefined;
    let refusedName = '';
    for (let i = 0; i < 200 && !refused; i += 1) {
      const userName = `refused.${i}${ORG_EMAIL_DOMAIN}`;
      const answer = await fetch(`${h.base}/Users`, { method: 'POST', headers: { authorization: `Bearer ${h.token}`, 'content-type': 'application/scim+json' }, body: JSON.stringify({ schemas: [USER], userName, name: { givenName: 'R', familyName: 'R' } }) });
      if (answer.status === 429) [refused, refusedName] = [answer, userName];
      else expect(answer.status).toBe(201);
    }
    expect(refused, 'a request met the limit').toBeDefined();
    expect(refused!.headers.get('retry-after')).toBe('1');
    const body = (await refused!.json()) as { schemas: string[]; status: string; detail: string };
    expect(body).toMatchObject({ schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'], status: '429' });
    expect(body.detail).toMatch(/TRAINSYNC_SCIM_MAX_IN_FLIGHT=1\); nothing was recorded/);
    const done = await held.finish();
    expect(done.status).toBe(201);
    // The limit is free again: the next request goes through.
    expect((await h.request('GET', '/Users?count=1')).status).toBe(200);
    // The refused create recorded nothing; the held one is stored.
    expect(await owner(h.app).db.selectFrom('trainsync.scim_users').select('user_name').where('user_name', '=', refusedName).execute()).toEqual([]);
    expect(await owner(h.app).db.selectFrom('trainsync.scim_users').select('user_name').where('user_name', '=', email).execute()).toEqual([{ user_name: email }]);
  });
});

import { describe, expect, it } from 'vitest';
import { routeOrg } from '../src/scim/server.ts';

/** Which organisation a SCIM path is for (src/scim/server.ts): `/scim/v2/<slug>/…`, and `/scim/v2/…` for the bare one. */
describe('routeOrg', () => {
  const served = new Map([
    ['default', {}],
    ['north', {}],
  ]);

  it('a slug names its organisation; the path below it is the resource', () => {
    expect(routeOrg('/scim/v2/north/Users/abc', served, 'default')).toEqual({ org: 'north', prefix: '/scim/v2/north', rest: ['Users', 'abc'] });
    expect(routeOrg('/scim/v2/default/Groups', served, 'default')).toEqual({ org: 'default', prefix: '/scim/v2/default', rest: ['Groups'] });
  });

  it('without a slug, the bare organisation (`default`: identity providers set up before organisations)', () => {
    expect(routeOrg('/scim/v2/Users', served, 'default')).toEqual({ org: 'default', prefix: '/scim/v2', rest: ['Users'] });
    expect(routeOrg('/scim/v2', served, 'default')).toEqual({ org: 'default', prefix: '/scim/v2', rest: [] });
    expect(routeOrg('/scim/v2/ServiceProviderConfig', served, undefined)).toEqual({ unknown: '' });
  });

  it('a slug no organisation serves is unknown, never another organisation', () => {
    expect(routeOrg('/scim/v2/south/Users', served, 'default')).toEqual({ unknown: 'south' });
    expect(routeOrg('/scim/v2/%zz/Users', served, 'default')).toEqual({ org: 'default', prefix: '/scim/v2', rest: ['%zz', 'Users'] });
  });
});

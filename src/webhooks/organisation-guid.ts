import { holderOfPlatformOrgId, learnPlatformOrgId, platformOrgIdOf } from '../warehouse/organisations.ts';
import type { OrgScope, OrgScopes } from '../warehouse/scope.ts';

/**
 * The platform's GUID of each organisation (training.organisations.platform_org_id):
 * the API has no call that returns it, so it is learned from the first verified
 * delivery to the organisation's path, and every later delivery must name the same
 * one. A secret copied to the wrong organisation's webhook (or a mix-up of paths) then
 * shows as a refusal instead of results loaded with the wrong key.
 */

const GUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** A learned GUID is re-read this often at most (another process may have learned it, or a person reset it). */
const CACHE_MS = 60_000;

export type OrganisationCheck = { ok: true; learned: boolean } | { ok: false; detail: string };

export interface OrganisationGuids {
  /** Checks an envelope's organisationId against the organisation's GUID, learning it if none is known yet. */
  /** `scope`: the organisation whose path the delivery came to. */
  check(scope: OrgScope, organisationId: string | null | undefined): Promise<OrganisationCheck>;
}

export function organisationGuids(scopes: Pick<OrgScopes, 'acrossOrganisations'>): OrganisationGuids {
  const cache = new Map<string, { guid: string; until: number }>();

  const known = async (scope: OrgScope): Promise<string | null> => {
    const cached = cache.get(scope.org);
    if (cached && cached.until > Date.now()) return cached.guid;
    const guid = await platformOrgIdOf(scope);
    if (guid !== null) cache.set(scope.org, { guid, until: Date.now() + CACHE_MS });
    else cache.delete(scope.org);
    return guid;
  };

  /** Sets the GUID if none is set; false when another organisation has it already (the column is unique). */
  const learn = async (scope: OrgScope, guid: string): Promise<{ owner?: string }> => {
    if (await learnPlatformOrgId(scope, guid)) return {};
    // Which organisation holds it is another organisation's row: read across them, on purpose.
    const owner = await scopes.acrossOrganisations('a webhook names a platform GUID another organisation holds', (all) => holderOfPlatformOrgId(all, guid));
    return { owner: owner ?? 'another organisation' };
  };

  return {
    async check(scope, organisationId) {
      const { org } = scope;
      // Older envelopes (and hand-made tests) may lack it: nothing to compare.
      if (organisationId === null || organisationId === undefined || organisationId.trim() === '') return { ok: true, learned: false };
      const given = organisationId.trim().toLowerCase();
      if (!GUID_RE.test(given)) return { ok: false, detail: `organisationId ${JSON.stringify(organisationId.slice(0, 60))} is not a GUID` };
      const expected = await known(scope);
      if (expected === given) return { ok: true, learned: false };
      if (expected !== null) return { ok: false, detail: `organisationId ${given} is not ${org}'s (${expected}, learned from its first verified delivery)` };
      const { owner } = await learn(scope, given);
      if (owner !== undefined) return { ok: false, detail: `organisationId ${given} belongs to organisation ${owner}, not ${org}` };
      // Another process may have learned a different GUID at the same instant: the table decides.
      const now = await known(scope);
      if (now === given) return { ok: true, learned: true };
      return { ok: false, detail: `organisationId ${given} is not ${org}'s (${now ?? 'unknown'})` };
    },
  };
}

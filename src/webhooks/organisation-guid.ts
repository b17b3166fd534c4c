import type { OrgScopes } from '../warehouse/scope.ts';

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
  check(org: string, organisationId: string | null | undefined): Promise<OrganisationCheck>;
}

export function organisationGuids(scopes: Pick<OrgScopes, 'scope' | 'acrossOrganisations'>): OrganisationGuids {
  const cache = new Map<string, { guid: string; until: number }>();

  const known = async (org: string): Promise<string | null> => {
    const cached = cache.get(org);
    if (cached && cached.until > Date.now()) return cached.guid;
    const { rows } = await scopes.scope(org).lend((client) => client.query<{ guid: string | null }>('select platform_org_id::text as guid from training.organisations where slug = $1', [org]));
    const guid = rows[0]?.guid ?? null;
    if (guid !== null) cache.set(org, { guid, until: Date.now() + CACHE_MS });
    else cache.delete(org);
    return guid;
  };

  /** Sets the GUID if none is set; false when another organisation has it already (the column is unique). */
  const learn = async (org: string, guid: string): Promise<{ owner?: string }> => {
    try {
      await scopes.scope(org).lend((client) => client.query('update training.organisations set platform_org_id = $2, updated_at = now() where slug = $1 and platform_org_id is null', [org, guid]));
      return {};
    } catch (error) {
      if ((error as { code?: unknown }).code !== '23505') throw error;
      // Which organisation holds it is another organisation's row: read across them, on purpose.
      const { rows } = await scopes.acrossOrganisations('a webhook names a platform GUID another organisation holds', (all) =>
        all.lend((client) => client.query<{ slug: string }>('select slug from training.organisations where platform_org_id = $1', [guid])),
      );
      return { owner: rows[0]?.slug ?? 'another organisation' };
    }
  };

  return {
    async check(org, organisationId) {
      // Older envelopes (and hand-made tests) may lack it: nothing to compare.
      if (organisationId === null || organisationId === undefined || organisationId.trim() === '') return { ok: true, learned: false };
      const given = organisationId.trim().toLowerCase();
      if (!GUID_RE.test(given)) return { ok: false, detail: `organisationId ${JSON.stringify(organisationId.slice(0, 60))} is not a GUID` };
      const expected = await known(org);
      if (expected === given) return { ok: true, learned: false };
      if (expected !== null) return { ok: false, detail: `organisationId ${given} is not ${org}'s (${expected}, learned from its first verified delivery)` };
      const { owner } = await learn(org, given);
      if (owner !== undefined) return { ok: false, detail: `organisationId ${given} belongs to organisation ${owner}, not ${org}` };
      // Another process may have learned a different GUID at the same instant: the table decides.
      const now = await known(org);
      if (now === given) return { ok: true, learned: true };
      return { ok: false, detail: `organisationId ${given} is not ${org}'s (${now ?? 'unknown'})` };
    },
  };
}

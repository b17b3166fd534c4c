import type { FastifySchemaValidationError } from 'fastify';
import { z } from 'zod';
import { zodIssueOf } from '../http/zod-schemas.ts';
import { ScimError, type ScimType } from './errors.ts';
import { readGroupCreate, readGroupReplace } from './groups.ts';
import { readPatchOp } from './patch.ts';
import { readUserBody } from './users.ts';

/**
 * The request bodies SCIM's routes declare (`schema.body`, routes.ts), checked by Fastify
 * before the handler runs, on the JSON the route's preValidation read (routes.ts, `readJson`). Each
 * is the reader the handler used to call first: a User's attributes (user-schema.ts, after their
 * names are made canonical), a Group's members, a PatchOp's shape. A refusal becomes a zod issue
 * carrying the reader's detail and scimType, and `scimSchemaError` turns it back into the same
 * SCIM 400 (`invalidValue`, `invalidSyntax`…) the reader gave.
 */

/** A reader of SCIM's as a zod schema: its value on success, its 400 as an issue (with its scimType) otherwise. */
function scimBody<T>(read: (body: unknown) => T): z.ZodType<T> {
  return z.unknown().transform((body, ctx) => {
    try {
      return read(body);
    } catch (error) {
      if (!(error instanceof ScimError) || error.status !== 400) throw error;
      ctx.issues.push({ code: 'custom', message: error.message, input: body, params: { scimType: error.scimType } });
      return z.NEVER;
    }
  });
}

/** POST /Users and PUT /Users/{id}: a User the mapping can read, with an e-mail and both names. */
export const userBody = scimBody(readUserBody);
/** POST /Groups: an existing platform group named by displayName or externalId, and member ids. */
export const groupCreateBody = scimBody(readGroupCreate);
/** PUT /Groups/{id}: the members, and a displayName that may only restate the group's. */
export const groupReplaceBody = scimBody(readGroupReplace);
/** PATCH /Users/{id} and /Groups/{id}: a PatchOp (its operations are applied, and checked further, by patch.ts). */
export const patchOpBody = scimBody((body) => {
  readPatchOp(body);
  return body;
});

/** The SCIM instance's schemaErrorFormatter: the first refusal, as the SCIM error its reader gave. */
export function scimSchemaError(errors: FastifySchemaValidationError[], part: string): ScimError {
  const issue = zodIssueOf(errors[0]);
  const scimType = (issue?.code === 'custom' ? (issue.params?.scimType as ScimType | undefined) : undefined) ?? 'invalidValue';
  return new ScimError(400, issue?.message ?? `the request's ${part} is not valid`, scimType);
}

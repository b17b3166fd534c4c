import { scimPatch, type ScimPatchOperation, type ScimResource } from 'scim-patch';
import { z } from 'zod';
import { PATCH_SCHEMA } from './discovery.ts';
import { badRequest } from './errors.ts';
import { isObject, type JsonObject } from './json.ts';

/**
 * PATCH (RFC 7644 §3.5.2) as Okta and Entra send it, applied by scim-patch. Entra's
 * habits are normalised first: capitalised ops ("Replace"), and path-less value objects
 * whose keys are themselves paths (`{"name.givenName": "Ann"}`, or an extension URN
 * with its attribute).
 */

const patchBodySchema = z.object({
  schemas: z.array(z.string()).refine((s) => s.includes(PATCH_SCHEMA), `schemas must include ${PATCH_SCHEMA}`),
  Operations: z
    .array(z.object({ op: z.string(), path: z.string().optional(), value: z.unknown().optional() }))
    .min(1, 'at least one operation'),
});

type Operation = { op: 'add' | 'replace' | 'remove'; path?: string; value?: unknown };

/** The path's attribute (before any '.', '[' or, for an extension URN, the URN itself). */
export function pathRoot(path: string): string {
  const urn = /^(urn:[^[]*?):[^:[]+(\[.*)?$/i.exec(path);
  if (urn && urn[1]!.split(':').length >= 7) return urn[1]!;
  return path.split(/[.[]/)[0]!;
}

/** A PatchOp body's shape (the PATCH routes' body schema, bodies.ts): 400 invalidSyntax naming what is wrong. */
export function readPatchOp(body: unknown): PatchOp {
  const parsed = patchBodySchema.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw badRequest(`not a PatchOp: ${issue?.path.join('.') || 'body'}: ${issue?.message ?? 'invalid'}`, 'invalidSyntax');
  }
  return parsed.data;
}

export type PatchOp = z.output<typeof patchBodySchema>;

function normalise(body: unknown): Operation[] {
  const out: Operation[] = [];
  for (const raw of readPatchOp(body).Operations) {
    const op = raw.op.toLowerCase();
    if (op !== 'add' && op !== 'replace' && op !== 'remove') throw badRequest(`op ${JSON.stringify(raw.op)}: expected add, replace or remove`, 'invalidSyntax');
    if (op === 'remove' && raw.path === undefined) throw badRequest('a remove needs a path', 'noTarget');
    // RFC 7644 §3.5.2.1/3: an add or replace carries a value; without a path, an object of attributes.
    if (op !== 'remove' && raw.value === undefined) throw badRequest(`an ${op} needs a value`, 'invalidSyntax');
    if (op !== 'remove' && raw.path === undefined && !isObject(raw.value)) throw badRequest(`an ${op} without a path needs an object of attributes as its value`, 'invalidValue');
    if (raw.path === undefined && isObject(raw.value)) {
      // A path-less value: plain keys stay together; keys that are paths become their own operations.
      const plain: JsonObject = {};
      for (const [key, value] of Object.entries(raw.value)) {
        if (key.includes('.') || key.toLowerCase().startsWith('urn:')) out.push({ op, path: key, value });
        else plain[key] = value;
      }
      if (Object.keys(plain).length > 0) out.push({ op, value: plain });
      continue;
    }
    out.push({ op, ...(raw.path === undefined ? {} : { path: raw.path }), ...(raw.value === undefined ? {} : { value: raw.value }) });
  }
  return out;
}

/**
 * Applies a PATCH body to a resource (not changed in place); returns the new resource.
 * `knownRoots` are the resource's attribute names (lower case): a path outside them is
 * refused with 400 invalidPath.
 */
export function applyPatch<T extends JsonObject>(resource: T, body: unknown, knownRoots: ReadonlySet<string>): T {
  const operations = normalise(body);
  for (const o of operations) {
    const roots = o.path !== undefined ? [pathRoot(o.path)] : isObject(o.value) ? Object.keys(o.value) : [];
    for (const root of roots) {
      if (!knownRoots.has(root.toLowerCase())) throw badRequest(`path "${o.path ?? root}": unknown attribute "${root}" (see GET /Schemas)`, 'invalidPath');
    }
  }
  const document = { ...resource, meta: { created: new Date(0), lastModified: new Date(0) } } as unknown as ScimResource;
  let patched: JsonObject;
  try {
    patched = scimPatch(document, operations as ScimPatchOperation[], { mutateDocument: false, treatMissingAsAdd: true }) as unknown as JsonObject;
  } catch (error) {
    const scimType = (error as { scimType?: string }).scimType;
    throw badRequest(`PATCH cannot be applied: ${(error as Error).message}`, scimType === 'noTarget' ? 'noTarget' : scimType === 'invalidPath' ? 'invalidPath' : 'invalidValue');
  }
  // Whatever the operations did, the result must still be a resource.
  if (!isObject(patched)) throw badRequest('PATCH cannot be applied: the operations leave no resource', 'invalidValue');
  const { meta: _meta, ...rest } = patched;
  return rest as T;
}

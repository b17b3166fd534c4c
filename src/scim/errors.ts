/**
 * SCIM errors (RFC 7644 §3.12): every refusal is answered in the error schema, with
 * `scimType` on a 400 or 409 and a `detail` a person can act on.
 */

import { HttpError } from '../http/http-error.ts';

export const ERROR_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:Error';

/** The scimType values this service uses (RFC 7644 table 9). */
export type ScimType = 'invalidFilter' | 'invalidSyntax' | 'invalidPath' | 'invalidValue' | 'mutability' | 'uniqueness' | 'noTarget' | 'tooMany';

/** A refusal in SCIM's terms; the HTTP server's one error mapping answers it (an `HttpError`), in SCIM's error schema. */
export class ScimError extends HttpError {
  constructor(
    status: number,
    detail: string,
    readonly scimType?: ScimType,
    headers: Readonly<Record<string, string>> = {},
  ) {
    super(status, detail, headers);
    this.name = 'ScimError';
  }
}

export interface ScimErrorBody {
  schemas: [typeof ERROR_SCHEMA];
  status: string;
  scimType?: ScimType;
  detail: string;
}

export function errorBody(status: number, detail: string, scimType?: ScimType): ScimErrorBody {
  return { schemas: [ERROR_SCHEMA], status: String(status), ...(scimType ? { scimType } : {}), detail };
}

export const badRequest = (detail: string, scimType: ScimType): ScimError => new ScimError(400, detail, scimType);
export const notFound = (detail: string): ScimError => new ScimError(404, detail);
export const conflict = (detail: string): ScimError => new ScimError(409, detail, 'uniqueness');

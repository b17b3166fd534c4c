import type { FastifySchemaCompiler, FastifySchemaValidationError } from 'fastify';
import type { z } from 'zod';

/**
 * Route schemas written in zod (the project's one schema language), checked by Fastify before
 * the handler runs: a route's `schema.params` or `schema.body` is a zod schema, the handler gets
 * its output (transforms included), and a failure reaches the server's `schemaErrorFormatter` as
 * Fastify's validation errors, each carrying the zod issue (`zodIssueOf`), so every server words
 * it its own way (SCIM's error schema, the receiver's `{"error"}`).
 */
export const zodValidatorCompiler: FastifySchemaCompiler<z.ZodType> =
  ({ schema }) =>
  (data: unknown) => {
    const parsed = schema.safeParse(data);
    if (parsed.success) return { value: parsed.data };
    return { error: parsed.error.issues.map(validationError) };
  };

function validationError(issue: z.core.$ZodIssue): FastifySchemaValidationError {
  return { keyword: issue.code, instancePath: issue.path.map((p) => `/${String(p)}`).join(''), schemaPath: '', params: { issue }, message: issue.message };
}

/** The zod issue behind one of Fastify's validation errors made by `zodValidatorCompiler`. */
export function zodIssueOf(error: FastifySchemaValidationError | undefined): z.core.$ZodIssue | undefined {
  return (error?.params as { issue?: z.core.$ZodIssue } | undefined)?.issue;
}

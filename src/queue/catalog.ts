import type { AnyJobDefinition } from './define-job.ts';

/** Job name → its definition (queue, payload schema, handler). */
export type JobCatalog = ReadonlyMap<string, AnyJobDefinition>;

/**
 * Builds the catalog and refuses, before the worker takes a single job, one with a job
 * registered twice or without a name.
 */
export function createJobCatalog(definitions: readonly AnyJobDefinition[]): JobCatalog {
  const catalog = new Map<string, AnyJobDefinition>();
  for (const definition of definitions) {
    if (!definition?.name) throw new Error('A job in jobs/index.ts has no name: every job file must export defineJob({ name, ... }).');
    if (catalog.has(definition.name)) {
      throw new Error(`Job "${definition.name}" is registered twice in jobs/index.ts: each job name must be unique.`);
    }
    catalog.set(definition.name, definition);
  }
  return catalog;
}

/** The registered job, or an error naming the ones that exist. */
export function lookupJob(catalog: JobCatalog, name: string): AnyJobDefinition {
  const definition = catalog.get(name);
  if (!definition) throw new Error(`No job named "${name}" is registered (known: ${[...catalog.keys()].join(', ')}).`);
  return definition;
}


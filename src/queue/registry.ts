import type { AnyJobDefinition } from './define-job.ts';

export type JobRegistry = ReadonlyMap<string, AnyJobDefinition>;

/**
 * Builds the name → job map and refuses a registry with a job registered twice or
 * without a name, before the worker takes a single job.
 */
export function createJobRegistry(definitions: readonly AnyJobDefinition[]): JobRegistry {
  const registry = new Map<string, AnyJobDefinition>();
  for (const definition of definitions) {
    if (!definition?.name) throw new Error('A job in jobs/index.ts has no name: every job file must export defineJob({ name, ... }).');
    if (registry.has(definition.name)) {
      throw new Error(`Job "${definition.name}" is registered twice in jobs/index.ts: each job name must be unique.`);
    }
    registry.set(definition.name, definition);
  }
  return registry;
}

/** The registered job, or an error naming the ones that exist. */
export function lookupJob(registry: JobRegistry, name: string): AnyJobDefinition {
  const definition = registry.get(name);
  if (!definition) {
    throw new Error(`No job named "${name}" is registered (known: ${[...registry.keys()].join(', ')}).`);
  }
  return definition;
}

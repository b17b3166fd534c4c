import { closest, distance } from 'fastest-levenshtein';

/** A `TRAINSYNC_*` variable trainsync does not read: a typo, most likely, silently ignored otherwise. */
export interface UnknownVariable {
  name: string;
  /** The known variable it most likely meant, when one is close. */
  suggestion?: string;
}

const PREFIX = 'TRAINSYNC_';

/**
 * The variables of `names` that start with TRAINSYNC_ and are not in `known`, each with
 * the nearest known name when it is close (a few letters off, or the name without
 * TRAINSYNC_: TRAINSYNC_REDIS_URL means REDIS_URL).
 */
export function unknownVariables(names: Iterable<string>, known: ReadonlySet<string>): UnknownVariable[] {
  const candidates = [...known];
  const found: UnknownVariable[] = [];
  for (const name of names) {
    if (!name.startsWith(PREFIX) || known.has(name)) continue;
    const unprefixed = name.slice(PREFIX.length);
    if (known.has(unprefixed)) {
      found.push({ name, suggestion: unprefixed });
      continue;
    }
    const nearest = candidates.length === 0 ? undefined : closest(name, candidates);
    const near = nearest !== undefined && distance(name, nearest) <= Math.max(2, Math.floor(name.length / 5));
    found.push(near ? { name, suggestion: nearest } : { name });
  }
  return found.sort((a, b) => a.name.localeCompare(b.name));
}

/** One sentence for them all: what is ignored, and what each probably meant. */
export function describeUnknownVariables(unknown: readonly UnknownVariable[]): string {
  if (unknown.length === 1) {
    const [only] = unknown as [UnknownVariable];
    return `${only.name} is not a trainsync variable, so it is ignored${only.suggestion === undefined ? '' : `: did you mean ${only.suggestion}?`}`;
  }
  const each = unknown.map((u) => (u.suggestion === undefined ? u.name : `${u.name} (did you mean ${u.suggestion}?)`));
  return `${each.slice(0, -1).join(', ')} and ${each.at(-1)} are not trainsync variables, so they are ignored`;
}

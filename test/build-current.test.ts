import { readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { DIST, sourceHash } from '../bin/build-info.js';

const buildInfoSchema = z.object({ entry: z.string(), inputs: z.array(z.string()).min(1), sourceHash: z.string() });

/** dist/build-info.json, or undefined when there is no build. */
function readBuildInfo(): z.infer<typeof buildInfoSchema> | undefined {
  try {
    return buildInfoSchema.parse(JSON.parse(readFileSync(path.join(DIST, 'build-info.json'), 'utf8')));
  } catch {
    return undefined;
  }
}

describe('dist/ (bin/trainsync.js runs it and checks nothing at start)', () => {
  it('was built from the sources as they are: else run npm run build', () => {
    const info = readBuildInfo();
    expect(info, 'dist/build-info.json is missing or unreadable: run npm run build').toBeDefined();
    // The same files hashed again: an edit, a deleted source or a new import (its importer changed) shows.
    expect(sourceHash(info!.inputs), 'dist/ is older than the sources: run npm run build').toBe(info!.sourceHash);
  });

  it('is text of one byte a character: one character above U+00FF and V8 holds all 5 MB of it at two', () => {
    const text = readFileSync(path.join(DIST, 'cli.js'), 'utf8');
    const wide = [...text.matchAll(/[^\u0000-\u00ff]/gu)].slice(0, 3).map((m) => `${JSON.stringify(text.slice(Math.max(0, m.index - 30), m.index + 10))}`);
    expect(wide, 'write such a character as an escape (\\u2502) in the source').toEqual([]);
  });
});

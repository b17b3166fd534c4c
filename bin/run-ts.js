#!/usr/bin/env node
// Runs any TypeScript entry point of this package (benchmarks, test fixtures, the simulator's
// child process) from its sources, through tsx's loader (a dev dependency): never stale,
// nothing to build first. The CLI itself runs from dist/ (bin/trainsync.js).
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { register } from 'tsx/esm/api';

const entry = process.argv[2];
if (!entry) {
  process.stderr.write('usage: node bin/run-ts.js <file.ts> [args...]\n');
  process.exit(2);
}
// argv[1] becomes the entry, as under `node file.js`, so a script can tell it was run directly.
process.argv.splice(1, 2, path.resolve(entry));
register();
await import(pathToFileURL(path.resolve(entry)).href);

#!/usr/bin/env node
// Runs any TypeScript entry point (benchmarks, scripts) through tsx's loader.
import { register } from 'tsx/esm/api';
import { pathToFileURL } from 'node:url';
import path from 'node:path';

const entry = process.argv[2];
if (!entry) {
  process.stderr.write('usage: node bin/run-ts.js <file.ts> [args...]\n');
  process.exit(2);
}
// argv[1] becomes the entry, as under `node file.js`, so a script can tell it was run directly.
process.argv.splice(1, 2, path.resolve(entry));
register();
await import(pathToFileURL(path.resolve(entry)).href);

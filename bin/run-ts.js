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
process.argv.splice(2, 1);
register();
await import(pathToFileURL(path.resolve(entry)).href);

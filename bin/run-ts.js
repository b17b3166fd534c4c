#!/usr/bin/env node
// Runs any TypeScript entry point (benchmarks, scripts) the way bin/trainsync.js runs the
// CLI: compiled ahead when current, else through tsx's loader (bin/compile-ahead.js).
import path from 'node:path';
import { runTypeScript } from './compile-ahead.js';

const entry = process.argv[2];
if (!entry) {
  process.stderr.write('usage: node bin/run-ts.js <file.ts> [args...]\n');
  process.exit(2);
}
// argv[1] becomes the entry, as under `node file.js`, so a script can tell it was run directly.
process.argv.splice(1, 2, path.resolve(entry));
await runTypeScript(path.resolve(entry));

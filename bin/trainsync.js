#!/usr/bin/env node
// Runs the CLI as built by `npm run build` (dist/cli.js; `npm ci` builds it through
// `prepare`). Nothing is checked at start: the test suite holds dist/ to the sources.
import { existsSync } from 'node:fs';
import module from 'node:module';

// V8 keeps the compiled code of dist/cli.js and its dependencies on disk (the system's
// temporary folder, node-compile-cache/), so every command after the first starts with less
// CPU; the cache is checked against each file's contents, so a rebuilt dist/ is compiled anew.
module.enableCompileCache?.();

const cli = new URL('../dist/cli.js', import.meta.url);
if (!existsSync(cli)) {
  process.stderr.write('trainsync: dist/cli.js is missing: run `npm run build` (or `npm ci`, which builds it)\n');
  process.exit(1);
}
await import(cli.href);

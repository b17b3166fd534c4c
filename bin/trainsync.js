#!/usr/bin/env node
// Runs the CLI as built by `npm run build` (dist/cli.js; `npm ci` builds it through
// `prepare`). Nothing is checked at start: the test suite holds dist/ to the sources.
import { existsSync } from 'node:fs';

const cli = new URL('../dist/cli.js', import.meta.url);
if (!existsSync(cli)) {
  process.stderr.write('trainsync: dist/cli.js is missing: run `npm run build` (or `npm ci`, which builds it)\n');
  process.exit(1);
}
await import(cli.href);

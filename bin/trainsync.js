#!/usr/bin/env node
// Runs the CLI as built by `npm run build` (dist/cli.js; `npm ci` builds it through
// `prepare`). First the Node version: on a Node older than 22 one line says which one
// this is and how to get 22, exit 2, before dist/ (which uses what Node 22 has) is loaded.
// So this file parses on every Node that runs ES modules: no top-level await, no `?.`
// (test/node-version.test.ts checks). Nothing else is checked at start: the test suite
// holds dist/ to the sources.
import { nodeVersionProblem } from './node-version.js';

const problem = nodeVersionProblem(process.versions.node);
if (problem !== undefined) {
  process.stderr.write(problem + '\n');
  process.exit(2);
}

start();

async function start() {
  const fs = await import('node:fs');
  const nodeModule = await import('node:module');
  // V8 keeps the compiled code of dist/cli.js and its dependencies on disk (the system's
  // temporary folder, node-compile-cache/), so every command after the first starts with less
  // CPU; the cache is checked against each file's contents, so a rebuilt dist/ is compiled anew.
  if (typeof nodeModule.default.enableCompileCache === 'function') nodeModule.default.enableCompileCache();
  const cli = new URL('../dist/cli.js', import.meta.url);
  if (!fs.existsSync(cli)) {
    process.stderr.write('trainsync: dist/cli.js is missing: run `npm run build` (or `npm ci`, which builds it)\n');
    process.exit(1);
  }
  await import(cli.href);
}

#!/usr/bin/env node
// Builds the CLI's bundle ahead (`npm ci` runs this as `prepare`, `npm run build` too), so
// the first `npx trainsync` starts fast. Never fails an install: without esbuild or a
// writable node_modules, bin/trainsync.js runs the sources through tsx instead.
import { fileURLToPath } from 'node:url';
import { buildBundle, freshBundle } from './compile-ahead.js';

const entry = fileURLToPath(new URL('../src/cli.ts', import.meta.url));
const built = freshBundle('src__cli') ?? (await buildBundle(entry));
process.stderr.write(built ? `trainsync: CLI compiled ahead (${built})\n` : 'trainsync: CLI not compiled ahead; it will run through tsx\n');

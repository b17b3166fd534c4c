#!/usr/bin/env node
// Builds the CLI into dist/ (`npm run build`, after the type check; `npm ci` runs it as
// `prepare`): one esbuild bundle, dist/cli.js, its source map, and dist/build-info.json,
// a hash of the files it was built from. bin/trainsync.js runs dist/cli.js and checks
// nothing at start; test/build-current.test.ts recomputes the hash and fails with "run
// npm run build" when the sources moved on. See docs/architecture.md, "The build".
//
// The bundle holds our code and the pure-JavaScript packages (BUNDLED, with what they
// import) whose hundreds of small modules were most of a start-up. Packages that find
// files of their own at run time or load native code (pino's worker threads, pg's optional
// native binding: LEFT_OUT) stay in node_modules and load as usual, and so does any
// package not listed. Those, and Node's own modules, the bundle loads with require(),
// never `import` (see BY_REQUIRE).
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import path from 'node:path';
import * as esbuild from 'esbuild';
import { BUILD_INPUTS, DIST, readFromDisk, ROOT, sourceHash } from './build-info.js';

const ENTRY = 'src/cli.ts';
/**
 * Packages our sources import that go into the bundle, with whatever they import in
 * turn (save LEFT_OUT). Measured on 2 busy cores: `trainsync --help` 0.63 s with every
 * package left out, 0.44 s with the first seven in, 0.36 s with bullmq too. undici (the
 * platform transport) in: medians of 7 at 470 ms against 500–560 ms loaded from node_modules.
 * The HTTP server's (fastify and its plugins), the metrics', the orgs file's yaml and the
 * rest our sources import at the top level: `bench/startup.ts` 714 → 609–619 ms on a slower
 * machine (every package above was loaded at start whatever the command).
 */
const BUNDLED = new Set(['zod', 'kysely', 'undici', 'commander', 'csv-parse', 'cli-table3', 'cli-progress', 'bullmq', 'yaml', 'fastify', '@fastify/cookie', '@fastify/csrf-protection', '@fastify/formbody', 'prom-client', 'cron-parser', 'fastest-levenshtein', 'scim-patch', 'scim2-parse-filter', 'csv-stringify', 'iconv-lite']);
/**
 * Never bundled, whoever imports them: they locate files of their own, or native code,
 * at run time. ioredis reads its package.json for the client name it gives Redis, and
 * bullmq (bundled) must use the very ioredis our code hands it connections of.
 */
const LEFT_OUT = new Set(['pino', 'pino-pretty', 'thread-stream', 'pg', 'pg-native', 'ioredis', 'msgpackr-extract', 'esbuild']);
/** CommonJS code bundled into an ES module still calls require() for Node's own modules. */
const REQUIRE_SHIM = "import { createRequire as __trainsyncCreateRequire } from 'node:module'; const require = __trainsyncCreateRequire(import.meta.url);";

/** `@scope/name/sub` → `@scope/name`; `name/sub` → `name`. */
function packageOf(specifier) {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

/**
 * The namespace of the one-line modules that stand for what the bundle leaves out. An
 * `import` of a Node module or of a package left out would stay an `import` in the bundle,
 * and Node's ES-module loader costs more than require() for both: it scans each CommonJS
 * package's source for its export names (cjs-module-lexer), and it builds a built-in's
 * module namespace by reading every export, getters included (node:http's `WebSocket`
 * loads Node's own copy of undici). So each such import becomes one of these modules,
 * `module.exports = require(…)`, and esbuild's interop gives the importer the same default
 * and named exports Node's would. Measured: `trainsync --help` 373–378 → 281–286 ms of CPU,
 * `trainsync status` 425 → 326 ms (medians of 10, 2 busy cores).
 */
const BY_REQUIRE = 'by-require';

/** Which package imports become part of the bundle: BUNDLED ones and their own imports, minus LEFT_OUT. */
const leaveOutPackages = {
  name: 'leave-out-packages',
  setup(build) {
    const leftOut = (args) =>
      // The require() inside a BY_REQUIRE module, and any require() call: left as it is.
      args.kind === 'require-call' || args.namespace === BY_REQUIRE ? { path: args.path, external: true } : { path: args.path, namespace: BY_REQUIRE };
    build.onResolve({ filter: /^[^./]/ }, (args) => {
      if (isBuiltin(args.path)) return leftOut(args);
      const name = packageOf(args.path);
      if (LEFT_OUT.has(name)) return leftOut(args);
      const fromPackage = args.importer.includes(`${path.sep}node_modules${path.sep}`);
      if (fromPackage || BUNDLED.has(name)) return undefined;
      return leftOut(args);
    });
    build.onLoad({ filter: /.*/, namespace: BY_REQUIRE }, (args) => ({ contents: `module.exports = require(${JSON.stringify(args.path)});`, loader: 'js' }));
  },
};

/** Our sources as the build read them (path relative to the package root → bytes), for the hash. */
const loaded = new Map();

/**
 * `import.meta.url` keeps meaning the source file's own URL inside the bundle (the
 * migrator finds sql/ and the demo its feed relative to it).
 */
const sourceImportMetaUrl = {
  name: 'source-import-meta-url',
  setup(build) {
    build.onLoad({ filter: /\.[cm]?ts$/ }, (args) => {
      if (args.path.includes(`${path.sep}node_modules${path.sep}`)) return undefined;
      const bytes = readFileSync(args.path);
      loaded.set(path.relative(ROOT, args.path).split(path.sep).join('/'), bytes);
      const text = bytes.toString('utf8');
      if (!text.includes('import.meta.url')) return { contents: text, loader: 'ts' };
      const rel = path.relative(DIST, args.path).split(path.sep).map(encodeURIComponent).join('/');
      return { contents: text.replaceAll('import.meta.url', `new URL(${JSON.stringify(rel)}, import.meta.url).href`), loader: 'ts' };
    });
  },
};

const started = Date.now();
// Built beside dist/, then each file renamed into it (the bundle last): a process starting
// meanwhile runs the old bundle or the new one, never half of one.
const staging = `${DIST}.building-${process.pid}`;
rmSync(staging, { recursive: true, force: true });
mkdirSync(staging, { recursive: true });
try {
  const result = await esbuild.build({
    absWorkingDir: ROOT,
    entryPoints: [ENTRY],
    outfile: path.join(staging, 'cli.js'),
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node22',
    sourcemap: 'linked',
    minifyWhitespace: true,
    minifySyntax: true,
    sourcesContent: false,
    metafile: true,
    logLevel: 'warning',
    banner: { js: REQUIRE_SHIM },
    plugins: [leaveOutPackages, sourceImportMetaUrl],
  });
  // Our files in the bundle, and what else shapes it (bundled packages come with package-lock.json).
  const sources = Object.keys(result.metafile.inputs).filter((input) => !input.includes('node_modules/'));
  const inputs = [...new Set([...sources, ...BUILD_INPUTS])].sort();
  // Hashed as read, so a source edited during the build leaves a hash the test will not match.
  const info = { entry: ENTRY, inputs, sourceHash: sourceHash(inputs, (file) => loaded.get(file) ?? readFromDisk(file)) };
  writeFileSync(path.join(staging, 'build-info.json'), `${JSON.stringify(info, null, 2)}\n`);
  // The source map names files relative to its folder: a sibling of dist/, so the same once moved.
  mkdirSync(DIST, { recursive: true });
  const files = readdirSync(staging).sort((a, b) => Number(a === 'cli.js') - Number(b === 'cli.js'));
  for (const file of files) renameSync(path.join(staging, file), path.join(DIST, file));
} finally {
  rmSync(staging, { recursive: true, force: true });
}
const size = Math.round(readFileSync(path.join(DIST, 'cli.js')).length / 1024);
process.stderr.write(`trainsync: built dist/cli.js (${size} kB) in ${Date.now() - started} ms\n`);

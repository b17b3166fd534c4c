// Runs a TypeScript entry point of this package from JavaScript compiled ahead, never from
// JavaScript that could be stale. See README, "Why a loader, not a build step".
//
// The entry is bundled by esbuild into node_modules/.cache/trainsync/: our sources, and
// the pure-JavaScript packages (BUNDLED, with what they import) whose hundreds of small
// modules are most of a start-up, with a manifest listing every source file it was
// built from and that file's mtime. Packages that find files of their own at run time
// or load native code (pino's worker threads, pg's optional native binding: LEFT_OUT)
// stay in node_modules and load as usual, and so does any package not listed.
import { mkdirSync, readdirSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const CACHE = path.join(ROOT, 'node_modules', '.cache', 'trainsync');
/** Bumped whenever the way bundles are built changes, so older ones are not used. */
const FORMAT = 1;
/** Files besides the sources that change what a build produces. */
const BUILD_INPUTS = ['package.json', 'package-lock.json', 'tsconfig.json', 'bin/compile-ahead.js'];
/**
 * Packages our sources import that go into the bundle, with whatever they import in
 * turn (save LEFT_OUT). Measured on 2 busy cores: `trainsync --help` 0.63 s with every
 * package left out, 0.44 s with the first seven in, 0.36 s with bullmq too. undici (the
 * platform transport) in: medians of 7 at 470 ms against 500–560 ms loaded from node_modules.
 */
const BUNDLED = new Set(['zod', 'kysely', 'got', 'undici', 'commander', 'csv-parse', 'cli-table3', 'cli-progress', 'bullmq']);
/**
 * Never bundled, whoever imports them: they locate files of their own, or native code,
 * at run time. ioredis reads its package.json for the client name it gives Redis, and
 * bullmq (bundled) must use the very ioredis our code hands it connections of.
 */
const LEFT_OUT = new Set(['pino', 'pino-pretty', 'thread-stream', 'pg', 'pg-native', 'ioredis', 'msgpackr-extract', 'tsx', 'esbuild']);
/** CommonJS code bundled into an ES module still calls require() for Node's own modules. */
const REQUIRE_SHIM = "import { createRequire as __trainsyncCreateRequire } from 'node:module'; const require = __trainsyncCreateRequire(import.meta.url);";

/** `@scope/name/sub` → `@scope/name`; `name/sub` → `name`. */
function packageOf(specifier) {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

/** Which package imports become part of the bundle: BUNDLED ones and their own imports, minus LEFT_OUT. */
const leaveOutPackages = {
  name: 'leave-out-packages',
  setup(build) {
    build.onResolve({ filter: /^[^./]/ }, (args) => {
      if (args.path.startsWith('node:')) return { path: args.path, external: true };
      const name = packageOf(args.path);
      if (LEFT_OUT.has(name)) return { path: args.path, external: true };
      const fromPackage = args.importer.includes(`${path.sep}node_modules${path.sep}`);
      if (fromPackage || BUNDLED.has(name)) return undefined;
      return { path: args.path, external: true };
    });
  },
};

/** `src/cli.ts` → `src__cli`; undefined for an entry outside this package. */
function bundleName(entry) {
  const rel = path.relative(ROOT, entry);
  if (rel.startsWith('..') || path.isAbsolute(rel)) return undefined;
  return rel.replace(/\.[cm]?ts$/, '').split(path.sep).join('__');
}

function manifestPath(name) {
  return path.join(CACHE, `${name}.json`);
}

/** The bundle of `name` if it was built from exactly the files as they are now. */
export function freshBundle(name) {
  let manifest;
  try {
    manifest = JSON.parse(readFileSync(manifestPath(name), 'utf8'));
  } catch {
    return undefined;
  }
  if (manifest?.format !== FORMAT || typeof manifest.bundle !== 'string' || typeof manifest.inputs !== 'object') return undefined;
  for (const [file, mtimeMs] of Object.entries(manifest.inputs)) if (mtimeOf(file) !== mtimeMs) return undefined;
  const bundle = path.join(CACHE, manifest.bundle);
  return exists(bundle) ? bundle : undefined;
}

/** A file's mtime, or -1 when it does not exist (a deleted source, a project without a lock file). */
function mtimeOf(file) {
  try {
    return statSync(path.join(ROOT, file)).mtimeMs;
  } catch {
    return -1;
  }
}

/**
 * `import.meta.url` keeps meaning the source file's own URL inside the bundle (the
 * migrator finds sql/ and the demo its feed relative to it), wherever the bundle lives.
 */
function sourceImportMetaUrl(outDir) {
  return {
    name: 'source-import-meta-url',
    setup(build) {
      build.onLoad({ filter: /\.[cm]?ts$/ }, async (args) => {
        if (args.path.includes(`${path.sep}node_modules${path.sep}`)) return undefined;
        const text = await readFile(args.path, 'utf8');
        if (!text.includes('import.meta.url')) return { contents: text, loader: 'ts' };
        const rel = path.relative(outDir, args.path).split(path.sep).map(encodeURIComponent).join('/');
        return { contents: text.replaceAll('import.meta.url', `new URL(${JSON.stringify(rel)}, import.meta.url).href`), loader: 'ts' };
      });
    },
  };
}

/**
 * Bundles `entry` and records what it was built from. Returns the bundle's path, or
 * undefined when no bundle can be built here. A source changed while building is
 * noticed: the bundle serves this run, but no manifest vouches for it.
 */
export async function buildBundle(entry) {
  const name = bundleName(entry);
  if (name === undefined) return undefined;
  let esbuild;
  try {
    esbuild = await import('esbuild');
  } catch {
    return undefined;
  }
  const id = `${Date.now().toString(36)}-${process.pid.toString(36)}`;
  const file = `${name}.${id}.mjs`;
  const started = Date.now();
  let result;
  try {
    mkdirSync(CACHE, { recursive: true });
    result = await esbuild.build({
      absWorkingDir: ROOT,
      entryPoints: [entry],
      outfile: path.join(CACHE, file),
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      sourcemap: 'linked',
      minifyWhitespace: true,
      minifySyntax: true,
      sourcesContent: false,
      metafile: true,
      logLevel: 'silent',
      banner: { js: REQUIRE_SHIM },
      plugins: [leaveOutPackages, sourceImportMetaUrl(CACHE)],
    });
  } catch {
    return undefined;
  }
  const inputs = {};
  let changedMeanwhile = false;
  // Bundled packages count too: an `npm ci` that changes one changes package-lock.json.
  const sources = Object.keys(result.metafile.inputs).filter((input) => !input.includes('node_modules/'));
  for (const input of [...sources, ...BUILD_INPUTS]) {
    const mtimeMs = mtimeOf(input);
    if (mtimeMs >= started || (mtimeMs === -1 && sources.includes(input))) changedMeanwhile = true;
    inputs[input] = mtimeMs;
  }
  if (!changedMeanwhile) {
    // The manifest is the one file that says which bundle is current: replaced in one rename.
    const manifest = manifestPath(name);
    const temp = `${manifest}.${id}.tmp`;
    try {
      writeFileSync(temp, `${JSON.stringify({ format: FORMAT, bundle: file, builtAt: new Date(started).toISOString(), inputs })}\n`);
      renameSync(temp, manifest);
    } catch {
      // Not recorded: the next run builds again, and still never runs a stale bundle.
    }
  }
  removeOldBundles(name, file);
  return path.join(CACHE, file);
}

/** Earlier bundles of `name`, once no starting process can still be about to import them. */
function removeOldBundles(name, keep) {
  const cutoff = Date.now() - 60_000;
  try {
    for (const entry of readdirSync(CACHE)) {
      if (!entry.startsWith(`${name}.`) || entry.startsWith(keep) || entry.endsWith('.json')) continue;
      const full = path.join(CACHE, entry);
      if (statSync(full).mtimeMs < cutoff) unlinkSync(full);
    }
  } catch {
    // Best effort: a leftover bundle costs disk space, nothing else.
  }
}

function exists(file) {
  try {
    statSync(file);
    return true;
  } catch {
    return false;
  }
}

/**
 * Runs `entry` (an absolute path to a .ts file of this package): its fresh bundle, a
 * new bundle, or the source through tsx. `process.argv[1]` is left to the caller.
 */
export async function runTypeScript(entry) {
  const name = bundleName(entry);
  const bundle = (name && freshBundle(name)) ?? (await buildBundle(entry));
  if (bundle !== undefined) {
    try {
      await import(pathToFileURL(bundle).href);
      return;
    } catch (error) {
      // Only a bundle removed between the check and the import falls through; nothing of
      // it ran. Any other error is the program's own.
      if (!(error?.code === 'ERR_MODULE_NOT_FOUND' && !exists(bundle))) throw error;
    }
  }
  const { register } = await import('tsx/esm/api');
  register();
  await import(pathToFileURL(entry).href);
}

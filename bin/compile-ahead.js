// Runs a TypeScript entry point of this package from JavaScript compiled ahead, never from
// JavaScript that could be stale. See README, "Why a loader, not a build step".
//
// The entry is bundled by esbuild (our sources only: packages stay in node_modules) into
// node_modules/.cache/trainsync/, with a manifest listing every source file it was built
// from and that file's mtime. A run uses the bundle only when every one of those files
// still has that mtime (so any edit, checkout, added or removed import falls back);
// otherwise it builds again (about a third of a second) or, when it cannot (no esbuild,
// a read-only node_modules, a build error), runs the sources through tsx's loader as
// before. `npm ci` builds the CLI's bundle ahead (the `prepare` script).
import { mkdirSync, readdirSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const CACHE = path.join(ROOT, 'node_modules', '.cache', 'trainsync');
/** Bumped whenever the way bundles are built changes, so older ones are not used. */
const FORMAT = 1;
/** Files besides the sources that change what a build produces. */
const BUILD_INPUTS = ['package.json', 'tsconfig.json', 'bin/compile-ahead.js'];

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
  try {
    for (const [file, mtimeMs] of Object.entries(manifest.inputs)) {
      if (statSync(path.join(ROOT, file)).mtimeMs !== mtimeMs) return undefined;
    }
    const bundle = path.join(CACHE, manifest.bundle);
    statSync(bundle);
    return bundle;
  } catch {
    return undefined;
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
      packages: 'external',
      platform: 'node',
      format: 'esm',
      target: 'node20',
      sourcemap: 'linked',
      sourcesContent: false,
      metafile: true,
      logLevel: 'silent',
      plugins: [sourceImportMetaUrl(CACHE)],
    });
  } catch {
    return undefined;
  }
  const inputs = {};
  let changedMeanwhile = false;
  for (const input of [...Object.keys(result.metafile.inputs), ...BUILD_INPUTS]) {
    try {
      const { mtimeMs } = statSync(path.join(ROOT, input));
      if (mtimeMs >= started) changedMeanwhile = true;
      inputs[input] = mtimeMs;
    } catch {
      changedMeanwhile = true;
    }
  }
  if (!changedMeanwhile) {
    // The manifest is the one file that says which bundle is current: replaced in one rename.
    const manifest = manifestPath(name);
    const temp = `${manifest}.${id}.tmp`;
    writeFileSync(temp, `${JSON.stringify({ format: FORMAT, bundle: file, builtAt: new Date(started).toISOString(), inputs })}\n`);
    renameSync(temp, manifest);
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

// What dist/ was built from, shared by the build (bin/build.js) and the test that holds the
// build to the sources (test/build-current.test.ts).
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const DIST = path.join(ROOT, 'dist');
/** Files besides the bundled sources that change what a build produces. */
export const BUILD_INPUTS = ['package-lock.json', 'tsconfig.json', 'bin/build.js', 'bin/build-info.js'];

/**
 * One hash over the files (paths relative to the package root, as the build lists them)
 * and their contents; a missing file hashes as missing, so a deleted source changes it.
 * `read` gives a file's contents (the build passes what esbuild read), else the disk's.
 */
export function sourceHash(files, read = readFromDisk) {
  const hash = createHash('sha256');
  for (const file of files) {
    const content = read(file) ?? Buffer.from('\0missing');
    hash.update(`${file}\0${content.length}\0`).update(content);
  }
  return hash.digest('hex');
}

/** A file's bytes, or undefined when it is not there. */
export function readFromDisk(file) {
  try {
    return readFileSync(path.join(ROOT, file));
  } catch {
    return undefined;
  }
}

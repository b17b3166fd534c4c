import { open } from 'node:fs/promises';
import path from 'node:path';
import { RefusedError } from './exit-codes.ts';

/** What to do about a feed file that cannot be opened, by the system's code. */
const FIXES: Readonly<Record<string, string>> = {
  ENOENT: 'no such file; check the path (relative paths start at the current directory) or export the feed again',
  EACCES: 'permission denied; make it readable by this user (chmod o+r, or run as its owner)',
  EPERM: 'permission denied; make it readable by this user (chmod o+r, or run as its owner)',
  EISDIR: 'it is a directory; give the feed file inside it',
};

/**
 * Opens the feed file before anything connects or plans: one that cannot be opened is
 * refused (exit 2) with one line naming it and the fix, and nothing else is printed.
 * Reading it (encoding, header, rows) stays the reader's (src/provisioning/feed).
 */
export async function requireFeedFile(file: string): Promise<void> {
  try {
    const handle = await open(file, 'r');
    try {
      // A directory opens on Linux; reading it is what fails.
      if ((await handle.stat()).isDirectory()) throw Object.assign(new Error('is a directory'), { code: 'EISDIR' });
    } finally {
      await handle.close();
    }
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'unreadable';
    const where = path.isAbsolute(file) ? file : `${file} (in ${process.cwd()})`;
    throw new RefusedError(`cannot read the feed ${where}: ${FIXES[code] ?? `${code}; check the path and that it is a readable file`}; nothing was planned or changed`);
  }
}

import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import GithubSlugger from 'github-slugger';
import { Lexer, type Token } from 'marked';

/**
 * Checks the links of Markdown pages the way GitHub renders them: every relative link and
 * image names a file inside the repository, every anchor a heading of its target (GitHub's
 * slugs, duplicates suffixed -1, -2), and absolute links go only to the allowed hosts.
 * Links inside code spans and fenced blocks are text, not links, and are not checked.
 */

/** A link as written: where it points and where it stands (1-based line). */
export interface DocLink {
  href: string;
  line: number;
}

export interface DocProblem {
  /** `file:line` relative to the repository root. */
  where: string;
  message: string;
}

/** Hosts an absolute link may name: well-known public documentation, never this project's surroundings. */
export const ALLOWED_HOSTS: ReadonlySet<string> = new Set([
  'nodejs.org',
  'www.postgresql.org',
  'redis.io',
  'docs.bullmq.io',
  'datatracker.ietf.org',
  'www.rfc-editor.org',
]);

/** Text of a page that must never appear: links beside the repository, and issue numbers. */
export const FORBIDDEN_TEXT: readonly { pattern: RegExp; why: string }[] = [
  { pattern: /ARCHITECTURE\.md/, why: 'names ARCHITECTURE.md, which is not in the repository (docs/architecture.md is)' },
  { pattern: /\.\.\/shared/, why: 'points at ../shared, outside the repository' },
  { pattern: /issue \d+/i, why: 'names an issue number; say what changed instead' },
];

interface ParsedPage {
  links: DocLink[];
  anchors: Set<string>;
}

const HTML_LINK = /\b(?:href|src)\s*=\s*"([^"]*)"/g;
const HTML_ANCHOR = /\b(?:id|name)\s*=\s*"([^"]*)"/g;

function lineAt(text: string, offset: number): number {
  let line = 1;
  for (let i = 0; i < offset && i < text.length; i++) if (text.charCodeAt(i) === 10) line++;
  return line;
}

/** The heading's text as GitHub renders it (code spans keep their content, markup goes). */
function plainText(tokens: readonly Token[]): string {
  let out = '';
  for (const token of tokens) {
    if (token.type === 'html') continue;
    if ('tokens' in token && Array.isArray(token.tokens) && token.tokens.length > 0) out += plainText(token.tokens as Token[]);
    else if (token.type === 'text' || token.type === 'codespan' || token.type === 'escape') out += token.text;
  }
  return out;
}

/** Links, images and anchors of one page; lines from each top-level block's place in the source. */
export function parsePage(source: string): ParsedPage {
  const links: DocLink[] = [];
  const anchors = new Set<string>();
  const slugger = new GithubSlugger();
  const blocks = Lexer.lex(source, { gfm: true });

  let blockStart = 0;
  for (const block of blocks) {
    // marked's top-level raws add up to the source; if one did not, find the block instead.
    const start = source.startsWith(block.raw, blockStart) ? blockStart : Math.max(0, source.indexOf(block.raw, blockStart));
    let cursor = 0;
    const place = (raw: string): number => {
      const found = block.raw.indexOf(raw, cursor);
      if (found < 0) return lineAt(source, start);
      cursor = found + raw.length;
      return lineAt(source, start + found);
    };
    const visit = (node: unknown): void => {
      if (Array.isArray(node)) {
        for (const child of node) visit(child);
        return;
      }
      if (node === null || typeof node !== 'object') return;
      const token = node as Partial<Token> & Record<string, unknown>;
      if (token.type === 'code' || token.type === 'codespan') return;
      if (token.type === 'heading' && Array.isArray(token.tokens)) anchors.add(slugger.slug(plainText(token.tokens as Token[])));
      if ((token.type === 'link' || token.type === 'image') && typeof token.href === 'string' && typeof token.raw === 'string') {
        links.push({ href: token.href, line: place(token.raw) });
      }
      if (token.type === 'def' && typeof token.href === 'string' && typeof token.raw === 'string') links.push({ href: token.href, line: place(token.raw) });
      if (token.type === 'html' && typeof token.raw === 'string') {
        const line = place(token.raw);
        for (const match of token.raw.matchAll(HTML_LINK)) links.push({ href: match[1] ?? '', line });
        for (const match of token.raw.matchAll(HTML_ANCHOR)) anchors.add(match[1] ?? '');
      }
      for (const key of ['tokens', 'items', 'header', 'rows']) if (key in token) visit(token[key]);
    };
    visit(block);
    blockStart = start + block.raw.length;
  }
  return { links, anchors };
}

/** README.md and every Markdown file under docs/, relative to the root, sorted. */
export function docPages(root: string): string[] {
  const pages: string[] = [];
  const walk = (dir: string): void => {
    for (const name of readdirSync(path.join(root, dir))) {
      const rel = path.posix.join(dir, name);
      if (statSync(path.join(root, rel)).isDirectory()) walk(rel);
      else if (name.endsWith('.md')) pages.push(rel);
    }
  };
  if (existsSync(path.join(root, 'README.md'))) pages.push('README.md');
  if (existsSync(path.join(root, 'docs'))) walk('docs');
  return pages.sort();
}

/** Every broken link, bad anchor, link leaving the repository and forbidden text of the pages. */
export function checkPages(root: string, pages: readonly string[]): DocProblem[] {
  const problems: DocProblem[] = [];
  const parsed = new Map<string, ParsedPage>();
  const pageOf = (rel: string): ParsedPage => {
    let page = parsed.get(rel);
    if (!page) {
      page = parsePage(readFileSync(path.join(root, rel), 'utf8'));
      parsed.set(rel, page);
    }
    return page;
  };

  for (const rel of pages) {
    const source = readFileSync(path.join(root, rel), 'utf8');
    source.split('\n').forEach((text, index) => {
      for (const { pattern, why } of FORBIDDEN_TEXT) if (pattern.test(text)) problems.push({ where: `${rel}:${index + 1}`, message: why });
    });

    for (const { href, line } of pageOf(rel).links) {
      const where = `${rel}:${line}`;
      const problem = checkLink(root, rel, href, pageOf);
      if (problem) problems.push({ where, message: `${href}: ${problem}` });
    }
  }
  const key = (p: DocProblem): [string, number] => [p.where.replace(/:\d+$/, ''), Number(/:(\d+)$/.exec(p.where)?.[1] ?? 0)];
  return problems.sort((a, b) => {
    const [fa, la] = key(a);
    const [fb, lb] = key(b);
    return fa === fb ? la - lb : fa < fb ? -1 : 1;
  });
}

function checkLink(root: string, from: string, href: string, pageOf: (rel: string) => ParsedPage): string | undefined {
  if (href.trim() === '') return 'an empty link';
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(href)?.[1]?.toLowerCase();
  if (scheme === 'http' || scheme === 'https') {
    const host = new URL(href).hostname;
    return ALLOWED_HOSTS.has(host) ? undefined : `a link outside the repository (${host} is not one of the allowed public sites: ${[...ALLOWED_HOSTS].join(', ')})`;
  }
  if (scheme !== undefined || href.startsWith('//')) return 'a link outside the repository';

  const hashAt = href.indexOf('#');
  const pathPart = (hashAt < 0 ? href : href.slice(0, hashAt)).split('?')[0] ?? '';
  const anchor = hashAt < 0 ? undefined : decoded(href.slice(hashAt + 1));
  if (anchor === null) return 'a malformed percent-encoding';

  let target = from;
  if (pathPart !== '') {
    const file = decoded(pathPart);
    if (file === null) return 'a malformed percent-encoding';
    const absolute = file.startsWith('/') ? path.join(root, file) : path.resolve(root, path.dirname(from), file);
    const relative = path.relative(root, absolute);
    if (relative === '..' || relative.startsWith(`..${path.sep}`) || path.isAbsolute(relative)) return 'resolves outside the repository';
    if (!existsSync(absolute)) return `no such file (${relative})`;
    target = relative.split(path.sep).join('/');
  }
  if (anchor === undefined) return undefined;
  if (!target.endsWith('.md')) return `an anchor (#${anchor}) on a file that is not Markdown`;
  if (statSync(path.join(root, target)).isDirectory()) return `an anchor on a folder`;
  return pageOf(target).anchors.has(anchor) ? undefined : `no heading of ${target} has the anchor #${anchor}`;
}

function decoded(text: string): string | null {
  try {
    return decodeURIComponent(text);
  } catch {
    return null;
  }
}

import { malformed } from './errors.ts';

/**
 * The log-in endpoints answer with the URL as plain text, not JSON. The vendor's own
 * sample is garbled (a repeated `moduleId`), so the body is parsed as a URL and its
 * query keys are checked, never fixed positions. The URL holds a one-time token: it is
 * never put into an error message or a log line.
 */

/** Query keys an automatic-start log-in URL must carry. */
export const AUTOSTART_LOGIN_KEYS: readonly string[] = ['token', 'userId', 'moduleId', 'orgId'];

/** Query keys a plain log-in URL must carry. */
export const LOGIN_KEYS: readonly string[] = ['token', 'userId', 'orgId'];

export function parseLoginUrl(body: string, requiredKeys: readonly string[] = AUTOSTART_LOGIN_KEYS, path = '/api/v2/login/autostart'): URL {
  // Tolerate a JSON-quoted string, which some gateways produce from a text body.
  let text = body.trim();
  if (text.startsWith('"') && text.endsWith('"') && text.length >= 2) {
    try {
      const unquoted: unknown = JSON.parse(text);
      if (typeof unquoted === 'string') text = unquoted.trim();
    } catch {
      // Not JSON after all: judged as it is below.
    }
  }
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw malformed('POST', path, `the body is not a URL (${text.length} characters)`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw malformed('POST', path, `the log-in URL is not http(s) (${url.protocol})`);
  const missing = requiredKeys.filter((key) => (url.searchParams.get(key) ?? '') === '');
  if (missing.length > 0) {
    throw malformed('POST', path, `the log-in URL lacks ${missing.join(', ')} (it has: ${[...new Set(url.searchParams.keys())].join(', ') || 'no query'})`);
  }
  return url;
}

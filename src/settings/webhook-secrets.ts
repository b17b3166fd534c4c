/**
 * Parsing of the webhook settings, kept out of src/webhooks so that src/config.ts
 * imports no wing. The signature check itself lives in src/webhooks/signature.ts.
 */

/** The vendor writes `<ProductName>-Signature`; the default accepts any header named `…-Signature`. */
export const DEFAULT_SIGNATURE_HEADER = '*-Signature';

/** Shorter decoded secrets are refused: a validation secret is random bytes, not a word. */
export const MIN_SECRET_BYTES = 16;

/** Standard or URL-safe base64, padding optional. */
export const BASE64_RE = /^[A-Za-z0-9+/_-]+={0,2}$/;

/**
 * `TRAINSYNC_WEBHOOK_SECRET`: one secret, or several separated by commas (the platform
 * gives each webhook its own, one webhook per event type; and a list allows rotation).
 * Returns the decoded keys, or a message saying what is wrong (never the value).
 */
export function parseWebhookSecrets(value: string): Buffer[] | string {
  const parts = value.split(',').map((part) => part.trim()).filter((part) => part !== '');
  if (parts.length === 0) return 'the validation secret exactly as the platform shows it (base64 text)';
  const keys: Buffer[] = [];
  for (const [index, part] of parts.entries()) {
    const which = parts.length > 1 ? `secret ${index + 1}: ` : '';
    if (!BASE64_RE.test(part)) return `${which}base64 text exactly as the platform shows it (letters, digits, "+", "/", "=")`;
    const key = Buffer.from(part, 'base64');
    if (key.length < MIN_SECRET_BYTES) return `${which}base64 text of at least ${MIN_SECRET_BYTES} bytes, exactly as the platform shows it`;
    keys.push(key);
  }
  return keys;
}

import { StringDecoder } from 'node:string_decoder';

/**
 * Text from data (an HR feed's names, a platform's group names, an event id) shown on a
 * terminal cannot drive the terminal: a raw ESC starts a sequence that clears the
 * screen (`ESC[2J`), sets the window title (OSC `ESC]0;…BEL`), or rewrites what was
 * printed above; a C1 control (U+0080–U+009F, e.g. U+009B CSI) does the same on many
 * terminals; a carriage return or backspace hides what came before it; bidirectional
 * overrides (U+202A–U+202E, U+2066–U+2069) reorder what a person reads. Each is shown
 * as its escape instead, `\u001b` for ESC: visible, and the same text inside a JSON
 * string (so a JSON document stays valid and means the same once escaped).
 */

/** C0 controls but the newline, DEL, C1 controls, and the bidirectional overrides and isolates. */
const UNSAFE_RE = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

const escapeOne = (char: string): string => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`;

/** `text` with every control character but the newline shown as `\uXXXX` (see above). */
export function showControls(text: string): string {
  return text.replace(UNSAFE_RE, escapeOne);
}

/** `text` as one line: the newline too is shown as `\u000a` (a table cell, a value inside a sentence). */
export function showControlsInline(text: string): string {
  return showControls(text).replace(/\n/g, '\\u000a');
}

/** Whether `text` holds anything `showControls` would escape. */
export function hasControls(text: string): boolean {
  UNSAFE_RE.lastIndex = 0;
  return new RegExp(UNSAFE_RE.source).test(text);
}

/**
 * Makes every later write of `stream` (stdout on a terminal) go through `showControls`:
 * the last line of defence for output that is not drawn by fitTable or fitText. Only
 * for a stream trainsync never writes escape sequences to on purpose.
 */
export function guardStream(stream: NodeJS.WriteStream): void {
  const write = stream.write.bind(stream) as (chunk: unknown, ...rest: unknown[]) => boolean;
  // Bytes are decoded as a stream: a character split across two writes stays one character.
  const decoder = new StringDecoder('utf8');
  stream.write = ((chunk: unknown, ...rest: unknown[]): boolean => {
    if (typeof chunk === 'string') return write(showControls(chunk), ...rest);
    if (chunk instanceof Uint8Array) return write(showControls(decoder.write(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength))), ...rest);
    return write(chunk, ...rest);
  }) as typeof stream.write;
}

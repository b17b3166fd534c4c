import { TrainsyncError } from '../../lib/errors.ts';
import { errorMessage } from '../../lib/errors.ts';
import { createHash, type Hash } from 'node:crypto';
import { TextDecoder } from 'node:util';
import iconv from 'iconv-lite';

const LF = 0x0a;
const CR = 0x0d;

/**
 * The encodings a feed may be in. Besides Unicode, the two single-byte ones HR systems on
 * Windows export: Windows-1252 (cp1252, "ANSI") and ISO-8859-1 (Latin-1), which differ
 * only in 0x80-0x9F (€, curly quotes and dashes in Windows-1252; control codes in Latin-1).
 */
export type FeedEncoding = 'utf-8' | 'utf-16le' | 'utf-16be' | 'windows-1252' | 'iso-8859-1';

const ENCODING_NAMES: Record<FeedEncoding, string> = {
  'utf-8': 'UTF-8',
  'utf-16le': 'UTF-16LE',
  'utf-16be': 'UTF-16BE',
  'windows-1252': 'Windows-1252',
  'iso-8859-1': 'ISO-8859-1',
};

/** The name a person reads for an encoding ("Windows-1252"). */
export function encodingName(encoding: FeedEncoding): string {
  return ENCODING_NAMES[encoding];
}

/** How the encoding of a file was chosen: its byte-order mark, the default (UTF-8), or the profile's `encoding`. */
export type EncodingSource = 'bom' | 'default' | 'profile';

/** The line feed as a code unit of each encoding. */
const LF_UNITS: Record<FeedEncoding, Buffer> = {
  'utf-8': Buffer.from([LF]),
  'utf-16le': Buffer.from([LF, 0x00]),
  'utf-16be': Buffer.from([0x00, LF]),
  'windows-1252': Buffer.from([LF]),
  'iso-8859-1': Buffer.from([LF]),
};

/** The encoding a byte-order mark names, if the file starts with one. */
function bomEncoding(bytes: Buffer): FeedEncoding | undefined {
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) return 'utf-8';
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return 'utf-16le';
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return 'utf-16be';
  return undefined;
}

/** Names a profile may give, lower case without "-", "_" or spaces. */
const ENCODING_ALIASES: Readonly<Record<string, FeedEncoding>> = {
  utf8: 'utf-8',
  utf16le: 'utf-16le',
  utf16be: 'utf-16be',
  windows1252: 'windows-1252',
  cp1252: 'windows-1252',
  win1252: 'windows-1252',
  iso88591: 'iso-8859-1',
  latin1: 'iso-8859-1',
};

/** Encoding names a profile may give (case-insensitive, with or without hyphens; cp1252 and latin1 as aliases). */
export function parseFeedEncoding(value: string): FeedEncoding | undefined {
  const key = value.trim().toLowerCase().replace(/[-_\s]/g, '');
  return Object.hasOwn(ENCODING_ALIASES, key) ? ENCODING_ALIASES[key] : undefined;
}

/** Where in the file decoding failed: the first byte that is not a character of the encoding. */
export interface BadBytes {
  /** 0-based offset in the file. */
  offset: number;
  /** 1-based column of that byte in its line, counted in bytes. */
  column: number;
  /** The byte itself. */
  byte: number;
}

/** Bytes that do not decode in the feed's encoding: a file error, since any value may be garbled. */
export class FeedEncodingError extends TrainsyncError {
  constructor(
    readonly line: number,
    readonly encoding: FeedEncoding,
    /** How the encoding was chosen: by the file's BOM, or (no BOM) the default or a profile's `encoding`. */
    readonly chosenBy: EncodingSource = encoding === 'utf-8' ? 'default' : 'bom',
    /** The first bad byte, when it could be found (a cut-off file ends inside a character instead). */
    readonly at?: BadBytes,
  ) {
    super(`line ${line} is not valid ${ENCODING_NAMES[encoding]}`, { code: 'FEED_ENCODING', retryable: false });
    this.name = 'FeedEncodingError';
  }

  /** The file error to report: where, what, and the fix. */
  describe(file: string): string {
    const name = ENCODING_NAMES[this.encoding];
    const why =
      this.chosenBy === 'bom'
        ? `the file starts with a ${name} byte-order mark`
        : this.chosenBy === 'profile'
          ? `the file has no byte-order mark and the profile's "encoding" says ${name}`
          : 'the file has no UTF-16 byte-order mark, so it is read as UTF-8';
    const where = this.at === undefined ? '' : `, byte ${this.at.column} (offset ${this.at.offset} in the file)`;
    const what =
      this.at !== undefined && LF_UNITS[this.encoding].length === 1 ? `the byte ${hex(this.at.byte)} is not valid ${name} here` : `bytes that are not valid ${name}`;
    return `${file} line ${this.line}${where}: ${what} (${why}), so the text cannot be read; nothing was planned: ${this.fix()}`;
  }

  private fix(): string {
    const byte = this.at?.byte;
    if (this.encoding === 'utf-8' && this.chosenBy !== 'bom') {
      // A byte ≥ 0x80 that is not UTF-8 is almost always a Windows export: show the letter it stands for there.
      const letter = byte !== undefined && byte >= 0x80 ? iconv.decode(Buffer.from([byte]), 'windows-1252') : undefined;
      const shown = letter !== undefined && letter !== '\ufffd' ? ` (there ${hex(byte!)} is "${letter}")` : '';
      const setting = this.chosenBy === 'profile' ? 'change the profile\'s "encoding" to "windows-1252"' : 'put "encoding": "windows-1252" in a feed profile (--profile FILE.json)';
      return `if the export is Windows-1252 or Latin-1${shown}, as many HR systems on Windows write it, ${setting}; or save the export as UTF-8`;
    }
    if (this.encoding === 'windows-1252') return 'bytes 0x81, 0x8D, 0x8F, 0x90 and 0x9D are no Windows-1252 character: if the export is Latin-1, put "encoding": "iso-8859-1" in the feed profile, or save the export as UTF-8';
    return 'save the export as UTF-8, or UTF-16 with a BOM';
  }
}

function hex(byte: number): string {
  return `0x${byte.toString(16).toUpperCase().padStart(2, '0')}`;
}

/** The file error for a read that stopped: undecodable bytes at their line, or the I/O error. */
export function readFailure(file: string, error: unknown): string {
  if (error instanceof FeedEncodingError) return error.describe(file);
  return `cannot read ${file}: ${errorMessage(error)}`;
}

/** Text from bytes, chunk by chunk; throws on bytes that are not a character of the encoding. */
interface Decoding {
  decode(bytes: Uint8Array | undefined, stream: boolean): string;
  /** The offset in `bytes` of the first byte that does not decode, if this decoding alone (no carried bytes) finds one. */
  firstBad(bytes: Uint8Array): number | undefined;
}

/** UTF-8 and UTF-16: Node's own decoder, fatal. */
function unicodeDecoding(encoding: 'utf-8' | 'utf-16le' | 'utf-16be'): Decoding {
  // ignoreBOM false: the decoder drops the byte-order mark, so parsers never see it.
  const decoder = new TextDecoder(encoding, { fatal: true, ignoreBOM: false });
  const unit = encoding === 'utf-8' ? 1 : 2;
  return {
    decode: (bytes, stream) => decoder.decode(bytes, { stream }),
    firstBad(bytes) {
      // The lenient decoder puts U+FFFD where bytes are bad; a U+FFFD the file really holds is skipped.
      const text = new TextDecoder(encoding, { ignoreBOM: true }).decode(bytes);
      const real = Buffer.from(encoding === 'utf-8' ? [0xef, 0xbf, 0xbd] : encoding === 'utf-16le' ? [0xfd, 0xff] : [0xff, 0xfd]);
      for (let at = text.indexOf('\ufffd'); at >= 0; at = text.indexOf('\ufffd', at + 1)) {
        const offset = unit === 1 ? Buffer.byteLength(text.slice(0, at), 'utf8') : at * 2;
        if (!Buffer.from(bytes.subarray(offset, offset + real.length)).equals(real)) return offset;
      }
      return undefined;
    },
  };
}

/** Windows-1252 and ISO-8859-1: one byte, one character (iconv-lite's tables); Windows-1252 leaves five bytes undefined. */
function singleByteDecoding(encoding: 'windows-1252' | 'iso-8859-1'): Decoding {
  const firstBad = (bytes: Uint8Array): number | undefined => {
    const at = iconv.decode(Buffer.from(bytes), encoding).indexOf('\ufffd');
    return at < 0 ? undefined : at;
  };
  return {
    decode(bytes) {
      if (bytes === undefined) return '';
      const text = iconv.decode(Buffer.from(bytes), encoding);
      if (text.includes('\ufffd')) throw new Error(`not ${ENCODING_NAMES[encoding]}`);
      return text;
    },
    firstBad,
  };
}

function decodingFor(encoding: FeedEncoding): Decoding {
  return encoding === 'windows-1252' || encoding === 'iso-8859-1' ? singleByteDecoding(encoding) : unicodeDecoding(encoding);
}

/**
 * Turns a feed's bytes (UTF-8, UTF-16 LE/BE with a BOM, or what a profile names) into
 * text, chunk by chunk.
 * Decoding is fatal: bad bytes throw a FeedEncodingError naming their line and offset
 * instead of becoming U+FFFD in some employee's name. To know that line, each chunk is
 * decoded one line at a time (split on the LF code unit, which always ends a character),
 * with a streaming decoder carrying characters cut by chunk ends, so memory stays flat
 * however long a line is. Also hashes the raw bytes and counts the lines.
 */
export class FeedDecoder {
  readonly hash: Hash = createHash('sha256');
  private encoding: FeedEncoding | undefined;
  private decoding: Decoding | undefined;
  private lf: Buffer = LF_UNITS['utf-8'];
  /** Bytes held back: the first bytes until a BOM can be seen, or half a UTF-16 code unit. */
  private carry: Buffer = Buffer.alloc(0);
  /** 1-based line of the next byte to decode. */
  private line = 1;
  /** Offsets in the file of the next byte to decode, and of the start of its line. */
  private offset = 0;
  private lineStart = 0;
  /**
   * The last bytes given to the decoder that it holds back, unread: the start of a
   * character cut by a chunk end. Kept so a bad character is found at its first byte.
   */
  private held: Buffer = Buffer.alloc(0);
  /** Bytes of a byte-order mark the decoder drops from its first text (they are in no character). */
  private bomBytes = 0;
  private lastLineHasText = false;
  private chosenBy: EncodingSource = 'default';

  /**
   * @param fallback the encoding of a file without a byte-order mark (default UTF-8;
   *   a profile may say another). A BOM always wins: it is what the exporting tool wrote.
   */
  constructor(private readonly fallback?: FeedEncoding) {}

  /** The encoding in use, once the first bytes were seen. */
  get detectedEncoding(): FeedEncoding | undefined {
    return this.encoding;
  }

  /** How the encoding in use was chosen (meaningful once the first bytes were seen). */
  get encodingSource(): EncodingSource {
    return this.chosenBy;
  }

  /** Text of the chunk (possibly less or more than its bytes: cut characters wait for the next). */
  write(chunk: Buffer): string {
    this.hash.update(chunk);
    const bytes = this.carry.length === 0 ? chunk : Buffer.concat([this.carry, chunk]);
    if (this.encoding === undefined) {
      // Three bytes: enough to see a UTF-8 or UTF-16 byte-order mark.
      if (bytes.length < 3) {
        this.carry = bytes;
        return '';
      }
      this.start(bytes);
    }
    // Whole code units only, so a UTF-16 LF is never split across two calls and always seen.
    const whole = bytes.length - (bytes.length % this.lf.length);
    this.carry = bytes.subarray(whole);
    return this.decodeLines(bytes.subarray(0, whole));
  }

  /** The rest of the text; throws if the file ends inside a character. */
  end(): string {
    if (this.encoding === undefined) this.start(this.carry);
    const text = this.decodeLines(this.carry);
    this.carry = Buffer.alloc(0);
    return text + this.decode(undefined, false);
  }

  /** Lines in the file: a last line without a newline counts; an empty file has 0. */
  get lineCount(): number {
    return this.line - 1 + (this.lastLineHasText ? 1 : 0);
  }

  digest(): string {
    return this.hash.digest('hex');
  }

  private start(firstBytes: Buffer): void {
    const bom = bomEncoding(firstBytes);
    this.chosenBy = bom !== undefined ? 'bom' : this.fallback !== undefined ? 'profile' : 'default';
    const encoding = bom ?? this.fallback ?? 'utf-8';
    this.encoding = encoding;
    this.bomBytes = bom === undefined ? 0 : bom === 'utf-8' ? 3 : 2;
    this.lf = LF_UNITS[encoding];
    this.decoding = decodingFor(encoding);
  }

  private decodeLines(bytes: Buffer): string {
    const unit = this.lf.length;
    let text = '';
    let from = 0;
    for (let lf = this.nextLf(bytes, 0); lf >= 0; lf = this.nextLf(bytes, from)) {
      text += this.decode(bytes.subarray(from, lf + unit), true);
      this.line += 1;
      this.lineStart = this.offset;
      this.lastLineHasText = false;
      from = lf + unit;
    }
    const tail = this.decode(bytes.subarray(from), true);
    if (tail !== '') this.lastLineHasText = true;
    return text + tail;
  }

  /**
   * Offset of the next LF code unit at or after `from`. `bytes` starts on a code-unit
   * boundary (the BOM is 2 bytes, the carry holds half units back), so in UTF-16 only an
   * even offset is a real LF: 0x0A is also half of other characters, such as U+010A.
   */
  private nextLf(bytes: Buffer, from: number): number {
    const unit = this.lf.length;
    for (let at = bytes.indexOf(this.lf, from); at >= 0; at = bytes.indexOf(this.lf, at + 1)) {
      if (at % unit === 0) return at;
    }
    return -1;
  }

  /** Decodes the next bytes of the file (`undefined`: the end), moving the offset past them. */
  private decode(bytes: Buffer | undefined, stream: boolean): string {
    const pending = bytes === undefined || bytes.length === 0 ? this.held : this.held.length === 0 ? bytes : Buffer.concat([this.held, bytes]);
    let text: string;
    try {
      text = this.decoding!.decode(bytes, stream);
    } catch {
      throw new FeedEncodingError(this.line, this.encoding!, this.chosenBy, this.badBytes(pending));
    }
    this.offset += bytes?.length ?? 0;
    // Fatal decoding gives back exactly the bytes it read: what it did not is held for the next call.
    const read = (this.encoding === 'utf-8' ? Buffer.byteLength(text, 'utf8') : text.length * this.lf.length) + this.bomBytes;
    if (this.bomBytes > 0 && pending.length >= this.bomBytes) this.bomBytes = 0;
    this.held = read >= pending.length ? Buffer.alloc(0) : Buffer.from(pending.subarray(read));
    return text;
  }

  /** The first bad byte of `pending` (held bytes, then the ones just given), where the decoder failed. */
  private badBytes(pending: Buffer): BadBytes | undefined {
    if (pending.length === 0) return undefined;
    const within = this.decoding!.firstBad(pending) ?? 0;
    const offset = this.offset - this.held.length + within;
    return { offset, column: offset - this.lineStart + 1, byte: pending[within]! };
  }
}

/**
 * Maps byte offsets to 1-based line numbers while a file streams past, so each CSV
 * record is reported at the line where it starts. csv-parse's own `info.lines` counts
 * the record's last line, and counts CRLF inside a quoted field twice.
 *
 * It indexes the UTF-8 text the parser is given (FeedDecoder's output, re-encoded), not
 * the file's bytes: csv-parse's `info.bytes` are offsets into that text, and there a
 * line feed is the single byte 0x0A, never part of another character. (Indexing a
 * UTF-16 file's own bytes put each line start on the second byte of the 2-byte LF,
 * one byte before the record, so every record was reported at the next line.)
 *
 * The reader feeds every chunk here before the parser sees it, then asks for the
 * start line of each record in file order; entries behind the asked offset are
 * dropped, so memory stays bounded by one chunk's lines.
 */
export class LineIndex {
  /** Start offset and number of completed, non-empty lines not yet passed. */
  private readonly starts: number[] = [];
  private readonly numbers: number[] = [];
  private head = 0;
  private offset = 0;
  private currentStart = 0;
  private currentLine = 1;
  private currentLength = 0;
  private lastByte = -1;

  push(chunk: Buffer): void {
    for (let i = 0; i < chunk.length; i += 1) {
      const byte = chunk[i]!;
      if (byte === LF) {
        // Empty lines ("" or "\r") are skipped by the parser, so a record never starts on one.
        const empty = this.currentLength === 0 || (this.currentLength === 1 && this.lastByte === CR);
        if (!empty) {
          this.starts.push(this.currentStart);
          this.numbers.push(this.currentLine);
        }
        this.currentLine += 1;
        this.currentStart = this.offset + i + 1;
        this.currentLength = 0;
      } else {
        this.currentLength += 1;
      }
      this.lastByte = byte;
    }
    this.offset += chunk.length;
  }

  /** Line on which the first non-empty line at or after `offset` starts. */
  lineAt(offset: number): number {
    while (this.head < this.starts.length && this.starts[this.head]! < offset) this.head += 1;
    if (this.head > 4096) {
      this.starts.splice(0, this.head);
      this.numbers.splice(0, this.head);
      this.head = 0;
    }
    if (this.head < this.starts.length) return this.numbers[this.head]!;
    return this.currentLine;
  }
}

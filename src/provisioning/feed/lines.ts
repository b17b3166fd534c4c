import { TrainsyncError } from '../../lib/errors.ts';
import { errorMessage } from '../../lib/errors.ts';
import { createHash, type Hash } from 'node:crypto';
import { TextDecoder } from 'node:util';

const LF = 0x0a;
const CR = 0x0d;

export type FeedEncoding = 'utf-8' | 'utf-16le' | 'utf-16be';

const ENCODING_NAMES: Record<FeedEncoding, string> = { 'utf-8': 'UTF-8', 'utf-16le': 'UTF-16LE', 'utf-16be': 'UTF-16BE' };

/** The line feed as a code unit of each encoding. */
const LF_UNITS: Record<FeedEncoding, Buffer> = {
  'utf-8': Buffer.from([LF]),
  'utf-16le': Buffer.from([LF, 0x00]),
  'utf-16be': Buffer.from([0x00, LF]),
};

/** The encoding a byte-order mark names, if the file starts with one. */
function bomEncoding(bytes: Buffer): FeedEncoding | undefined {
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) return 'utf-8';
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return 'utf-16le';
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return 'utf-16be';
  return undefined;
}

/** Encoding names a profile may give (case-insensitive, with or without the hyphen). */
export function parseFeedEncoding(value: string): FeedEncoding | undefined {
  const name = value.trim().toLowerCase().replace(/^utf(?!-)/, 'utf-');
  return name === 'utf-8' || name === 'utf-16le' || name === 'utf-16be' ? name : undefined;
}

/** Bytes that do not decode in the feed's encoding: a file error, since any value may be garbled. */
export class FeedEncodingError extends TrainsyncError {
  constructor(
    readonly line: number,
    readonly encoding: FeedEncoding,
    /** How the encoding was chosen: by the file's BOM, or (no BOM) the default or a profile's `encoding`. */
    readonly chosenBy: 'bom' | 'default' | 'profile' = encoding === 'utf-8' ? 'default' : 'bom',
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
    return `${file} line ${this.line}: bytes that are not valid ${name} (${why}), so the text cannot be read; nothing was planned: save the export as UTF-8, or UTF-16 with a BOM`;
  }
}

/** The file error for a read that stopped: undecodable bytes at their line, or the I/O error. */
export function readFailure(file: string, error: unknown): string {
  if (error instanceof FeedEncodingError) return error.describe(file);
  return `cannot read ${file}: ${errorMessage(error)}`;
}

/**
 * Turns a feed's bytes (UTF-8, or UTF-16 LE/BE with a BOM) into text, chunk by chunk.
 * Decoding is fatal: bad bytes throw a FeedEncodingError naming their line instead of
 * becoming U+FFFD in some employee's name. To know that line, each chunk is decoded
 * one line at a time (split on the LF code unit, which always ends a character), with
 * a streaming decoder carrying characters cut by chunk ends, so memory stays flat
 * however long a line is. Also hashes the raw bytes and counts the lines.
 */
export class FeedDecoder {
  readonly hash: Hash = createHash('sha256');
  private encoding: FeedEncoding | undefined;
  private decoder: TextDecoder | undefined;
  private lf: Buffer = LF_UNITS['utf-8'];
  /** Bytes held back: the first bytes until a BOM can be seen, or half a UTF-16 code unit. */
  private carry: Buffer = Buffer.alloc(0);
  /** 1-based line of the next byte to decode. */
  private line = 1;
  private lastLineHasText = false;
  private chosenBy: 'bom' | 'default' | 'profile' = 'default';

  /**
   * @param fallback the encoding of a file without a byte-order mark (default UTF-8;
   *   a profile may say UTF-16). A BOM always wins: it is what the exporting tool wrote.
   */
  constructor(private readonly fallback?: FeedEncoding) {}

  /** The encoding in use, once the first bytes were seen. */
  get detectedEncoding(): FeedEncoding | undefined {
    return this.encoding;
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
    // A UTF-8 BOM keeps the default's wording: "no UTF-16 byte-order mark, so read as UTF-8" is still true.
    if (bom === 'utf-16le' || bom === 'utf-16be') this.chosenBy = 'bom';
    else this.chosenBy = bom === undefined && this.fallback !== undefined && this.fallback !== 'utf-8' ? 'profile' : 'default';
    const encoding = bom ?? this.fallback ?? 'utf-8';
    this.encoding = encoding;
    this.lf = LF_UNITS[encoding];
    // ignoreBOM false: the decoder drops the byte-order mark, so parsers never see it.
    this.decoder = new TextDecoder(encoding, { fatal: true, ignoreBOM: false });
  }

  private decodeLines(bytes: Buffer): string {
    const unit = this.lf.length;
    let text = '';
    let from = 0;
    for (let lf = this.nextLf(bytes, 0); lf >= 0; lf = this.nextLf(bytes, from)) {
      text += this.decode(bytes.subarray(from, lf + unit), true);
      this.line += 1;
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

  private decode(bytes: Uint8Array | undefined, stream: boolean): string {
    try {
      return this.decoder!.decode(bytes, { stream });
    } catch {
      throw new FeedEncodingError(this.line, this.encoding!, this.chosenBy);
    }
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

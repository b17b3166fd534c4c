import { createHash, type Hash } from 'node:crypto';

const LF = 0x0a;
const CR = 0x0d;

/**
 * Maps byte offsets to 1-based line numbers while a file streams past, so each CSV
 * record is reported at the line where it starts. csv-parse's own `info.lines` counts
 * the record's last line, and counts CRLF inside a quoted field twice.
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
  readonly hash: Hash = createHash('sha256');

  push(chunk: Buffer): void {
    this.hash.update(chunk);
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

  /** Lines in the file: a last line without a newline counts; an empty file has 0. */
  get lineCount(): number {
    if (this.offset === 0) return 0;
    return this.currentLength === 0 ? this.currentLine - 1 : this.currentLine;
  }

  digest(): string {
    return this.hash.digest('hex');
  }
}

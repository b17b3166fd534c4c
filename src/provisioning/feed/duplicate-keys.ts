import { ChunkedColumn, int32Column, uint32Column } from '../../lib/typed-column.ts';

/** FNV-1a over the UTF-16 code units: a 32-bit hash, for the table below only. */
function hashOf(key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i += 1) {
    h ^= key.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/**
 * The lines each key of a feed (an employee_id, an e-mail) appears on, for the duplicate
 * rule, in a few bytes a key: a Map of a 300,000-row feed's keys was 14 MB each (28 bytes a
 * slot, twice as many slots as keys), held the whole read beside the rows. Here a key is its
 * first line, its hash and where its text is (a row the reader holds, by number, so the text
 * is not pointed at twice; else a string of its own), in columns, found through an
 * open-addressing table of key numbers (4 bytes a slot, at most half full). Keys seen on more
 * than one line, which a good export has none of, keep their further lines in a map.
 */
export class DuplicateKeys {
  /** Per key: ≥ 0 the number of a held row (`keyOfRow`), < 0 −1 − its index in `own`. */
  private readonly refs = int32Column();
  private readonly own = new ChunkedColumn<string>();
  private readonly firstLines = uint32Column();
  private readonly hashes = uint32Column();
  /** Slot → key number + 1; 0 is empty. */
  private table = new Int32Array(1 << 10);
  /** Key number → its lines after the first. */
  private readonly repeats = new Map<number, number[]>();

  /** `keyOfRow`: the key of a held row, by its number (see `noteRow`). */
  constructor(private readonly keyOfRow: (row: number) => string = () => '') {}

  /** Distinct keys seen. */
  get size(): number {
    return this.refs.length;
  }

  private keyAt(k: number): string {
    const ref = this.refs.at(k);
    return ref >= 0 ? this.keyOfRow(ref) : this.own.at(-1 - ref);
  }

  /** Notes that `key` is on `line`. */
  note(key: string, line: number): void {
    this.add(key, line, -1);
  }

  /** Notes that held row `row`'s key (`keyOfRow(row)`, which is `key`) is on `line`. */
  noteRow(row: number, key: string, line: number): void {
    this.add(key, line, row);
  }

  private add(key: string, line: number, row: number): void {
    const hash = hashOf(key);
    const mask = this.table.length - 1;
    for (let slot = hash & mask; ; slot = (slot + 1) & mask) {
      const entry = this.table[slot]!;
      if (entry === 0) {
        const k = this.refs.length;
        if (row >= 0) this.refs.push(row);
        else {
          this.refs.push(-1 - this.own.length);
          this.own.push(key);
        }
        this.firstLines.push(line);
        this.hashes.push(hash);
        this.table[slot] = k + 1;
        if (2 * (k + 1) > this.table.length) this.grow();
        return;
      }
      const k = entry - 1;
      if (this.hashes.at(k) === hash && this.keyAt(k) === key) {
        const more = this.repeats.get(k);
        if (more === undefined) this.repeats.set(k, [line]);
        else more.push(line);
        return;
      }
    }
  }

  private grow(): void {
    const table = new Int32Array(this.table.length * 2);
    const mask = table.length - 1;
    for (let k = 0; k < this.refs.length; k += 1) {
      let slot = this.hashes.at(k) & mask;
      while (table[slot] !== 0) slot = (slot + 1) & mask;
      table[slot] = k + 1;
    }
    this.table = table;
  }

  /** Each key seen on more than one line, with all its lines in the order seen; keys in the order first seen. */
  *duplicates(): Generator<[string, number[]]> {
    const numbers = [...this.repeats.keys()].sort((a, b) => a - b);
    for (const k of numbers) yield [this.keyAt(k), [this.firstLines.at(k), ...this.repeats.get(k)!]];
  }
}

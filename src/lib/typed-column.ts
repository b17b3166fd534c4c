/**
 * Columns for tables of many small records (a plan's actions, a feed's rows), which cost
 * far less than an object a record. Both kinds grow in chunks of 4,096 values: an array
 * grown by doubling copies itself on every growth (the old copies are garbage for the
 * collector to find, or, for a typed array, memory held until it does) and keeps up to as
 * much again in reserve; a chunked column does neither. Numbers go in typed arrays (a value
 * costs its bytes and no pointer, outside V8's heap), other values in plain arrays.
 */
export type TypedArray = Uint8Array | Int32Array | Uint32Array | Float64Array;

const CHUNK_BITS = 12;
const CHUNK = 1 << CHUNK_BITS;
const IN_CHUNK = CHUNK - 1;

/** A column of numbers of one typed-array kind. */
export class TypedColumn<T extends TypedArray> {
  private readonly chunks: T[] = [];
  private size = 0;

  constructor(private readonly make: (size: number) => T) {}

  get length(): number {
    return this.size;
  }

  push(value: number): void {
    const slot = this.size & IN_CHUNK;
    if (slot === 0) this.chunks.push(this.make(CHUNK));
    this.chunks[this.chunks.length - 1]![slot] = value;
    this.size += 1;
  }

  /** The value at `index` (< length). */
  at(index: number): number {
    return this.chunks[index >>> CHUNK_BITS]![index & IN_CHUNK]!;
  }

  /** Replaces the value at `index` (< length). */
  set(index: number, value: number): void {
    this.chunks[index >>> CHUNK_BITS]![index & IN_CHUNK] = value;
  }

  /** Keeps the first `length` values. */
  truncate(length: number): void {
    if (length >= this.size) return;
    this.chunks.length = Math.ceil(length / CHUNK);
    this.size = length;
  }
}

export const uint8Column = (): TypedColumn<Uint8Array> => new TypedColumn((size) => new Uint8Array(size));
export const int32Column = (): TypedColumn<Int32Array> => new TypedColumn((size) => new Int32Array(size));
export const uint32Column = (): TypedColumn<Uint32Array> => new TypedColumn((size) => new Uint32Array(size));
export const float64Column = (): TypedColumn<Float64Array> => new TypedColumn((size) => new Float64Array(size));

/**
 * A column of any values. A chunk that would hold nothing but `undefined` is never
 * allocated, so a column of values most records lack (or that a record has only when it
 * differs from another field) costs almost nothing when none has one.
 */
export class ChunkedColumn<T> {
  private readonly chunks: (T[] | undefined)[] = [];
  private size = 0;

  get length(): number {
    return this.size;
  }

  push(value: T): void {
    const slot = this.size & IN_CHUNK;
    if (slot === 0) this.chunks.push(undefined);
    this.size += 1;
    if (value !== undefined) this.set(this.size - 1, value);
  }

  /** The value at `index` (< length). */
  at(index: number): T {
    return this.chunks[index >>> CHUNK_BITS]?.[index & IN_CHUNK] as T;
  }

  /** Replaces the value at `index` (< length). */
  set(index: number, value: T): void {
    const c = index >>> CHUNK_BITS;
    let chunk = this.chunks[c];
    if (chunk === undefined) {
      if (value === undefined) return;
      chunk = new Array<T>(CHUNK);
      this.chunks[c] = chunk;
    }
    chunk[index & IN_CHUNK] = value;
  }

  /** Keeps the first `length` values. */
  truncate(length: number): void {
    if (length >= this.size) return;
    this.chunks.length = Math.ceil(length / CHUNK);
    const last = this.chunks[this.chunks.length - 1];
    // What lies past the end is no longer held.
    if (last !== undefined) last.fill(undefined as T, length & IN_CHUNK || CHUNK);
    this.size = length;
  }
}

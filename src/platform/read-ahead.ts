/**
 * Wraps an async iterable so up to `depth` items are fetched while the consumer is
 * still busy with the current one: the next page downloads while this one is written.
 * Errors surface in order, at the item where they happened.
 */
export async function* readAhead<T>(source: AsyncIterable<T>, depth = 1): AsyncGenerator<T> {
  const iterator = source[Symbol.asyncIterator]();
  const buffer: Array<Promise<IteratorResult<T>>> = [];
  const fill = (): void => {
    while (buffer.length < depth + 1) buffer.push(iterator.next());
  };
  try {
    fill();
    for (;;) {
      const next = await buffer.shift()!;
      if (next.done) return;
      fill();
      yield next.value;
    }
  } finally {
    // Settle what was requested ahead before closing, so no fetch is left dangling.
    await Promise.allSettled(buffer);
    await iterator.return?.();
  }
}

/**
 * One read shared by every metric of a scrape: the registry collects its metrics at once, so
 * the first collector starts `read` and the others get the same promise; the next scrape reads
 * again (the promise is forgotten once every collector of this one has had it).
 */
export function perScrape<T>(read: () => Promise<T>): () => Promise<T> {
  let inFlight: Promise<T> | undefined;
  return () => {
    inFlight ??= read().finally(() => setImmediate(() => (inFlight = undefined)));
    return inFlight;
  };
}

/**
 * Counts the platform requests made on behalf of one piece of work (a sync run),
 * though one client serves every job of the process: the run's view of the client
 * (`PlatformClient.counting`) hands its tally to every request it sends, and the
 * transport adds each HTTP attempt of such a request to it.
 *
 * Passed down, not kept in an AsyncLocalStorage: an AsyncLocalStorage in use turns on
 * Node's promise hooks for the whole process, a JavaScript call and two extra fields on
 * every promise any code makes (undici's, pg's, every async function's), and V8 compiles
 * those hooks too; a results sync makes thousands of promises a page.
 */
export interface RequestTally {
  requests: number;
}

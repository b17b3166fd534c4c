/**
 * The one error model. Every error trainsync throws on purpose derives from
 * TrainsyncError (a stable `code`, whether trying again can help, and the cause), and
 * every runner (the job runner, the provisioning runner, the webhook loader) decides
 * what to do with a failure through `classify()`, so "is this permanent?" has one answer.
 */

/** The code of a record that failed validation: permanent, and quarantined rather than retried. */
export const INVALID_RECORD = 'INVALID_RECORD';

export interface TrainsyncErrorInit {
  code: string;
  /** True when the same call may succeed later (a network fault, a 5xx, an outage). */
  retryable: boolean;
  cause?: unknown;
}

/** The base class of trainsync's errors. */
export class TrainsyncError extends Error {
  readonly code: string;
  readonly retryable: boolean;

  constructor(message: string, init: TrainsyncErrorInit) {
    super(message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = 'TrainsyncError';
    this.code = init.code;
    this.retryable = init.retryable;
  }
}

/** What a runner needs to know about a failure. */
export interface ErrorFacts {
  code: string;
  message: string;
  /** Worth another attempt. */
  retryable: boolean;
  /** A record that failed validation: store it in trainsync.quarantine, do not retry. */
  quarantine: boolean;
}

function foreignCode(error: unknown): string {
  return typeof error === 'object' && error !== null && 'code' in error && typeof error.code === 'string' ? error.code : 'ERROR';
}

/**
 * The one answer to "what do we do with this failure?". A TrainsyncError says so
 * itself; anything else (a pg error, a socket reset, a bug) is transient unless it
 * carries `retryable: false`, and is retried with backoff: a bounded number of
 * attempts decides, not a guess here.
 */
export function classify(error: unknown): ErrorFacts {
  if (error instanceof TrainsyncError) {
    return { code: error.code, message: errorMessage(error), retryable: error.retryable, quarantine: error.code === INVALID_RECORD };
  }
  // An error from elsewhere that says whether it is worth retrying is taken at its word.
  const said = typeof error === 'object' && error !== null && 'retryable' in error && typeof error.retryable === 'boolean' ? error.retryable : true;
  return { code: foreignCode(error), message: errorMessage(error), retryable: said, quarantine: false };
}

/**
 * The message of anything thrown: an Error's message, else its text; never empty. An
 * error without a message (an AggregateError of a connect that failed on every address,
 * an error that carries only a code or a cause, `throw new Error()`) is described by its
 * name, code, inner errors or cause: a job's failure reason, an audit row's message and
 * the CLI's last line are all this text, and an empty one read as a bare "failed".
 */
export function errorMessage(error: unknown, depth = 0): string {
  if (!(error instanceof Error)) {
    const text = typeof error === 'object' && error !== null && typeof (error as { message?: unknown }).message === 'string' ? (error as { message: string }).message : String(error);
    return text.trim() === '' ? `${error === '' ? 'an empty string' : typeof error} was thrown, with no message` : text;
  }
  if (error.message.trim() !== '') return error.message;
  const code = foreignCode(error);
  const head = `${error.name || 'Error'}${code === 'ERROR' ? '' : ` ${code}`}`;
  if (depth >= 3) return `${head} (no message)`;
  const inner = error instanceof AggregateError ? [...new Set(error.errors.map((e: unknown) => errorMessage(e, depth + 1)))] : [];
  if (inner.length > 0) return `${head}: ${inner.join('; ')}`;
  if (error.cause !== undefined) return `${head}: ${errorMessage(error.cause, depth + 1)}`;
  return `${head} (no message)`;
}

/**
 * A mass disable is applied only with its count typed by a person: `--force --confirm N` on
 * `provision` and `reconcile --fix`, `trainsync held --approve ID --confirm N`, the console's
 * field. N is checked against the disables the plan applies now (the platform and the
 * applied state read again under the lock), not against a count printed earlier.
 *
 * No message prints a whole command that would apply it (the person types the number, so a
 * mass disable is never one paste away), and a refusal does not hand the number over: it
 * says where the plan shows it, so the number typed is one read off the plan. One case
 * names it: the person typed the count the held plan showed, and the plan now takes access
 * from a different number of people (the platform changed); nothing shows that new count
 * yet, and the person has shown they read the old one. Pure.
 */

export interface ConfirmationAsk {
  /** What the person must give: `--confirm N`, or the console's field. */
  give: string;
  /** Where the number is shown: `trainsync held`, the plan's page, the plan printed above. */
  shownBy: string;
}

/** The most a typed count may be: more is no number of people, and never reaches Number's unsafe range. */
export const MAX_CONFIRM = 1_000_000_000;

/** A typed count as a number, or undefined when it is none (empty, signs, decimals, exponents, words, too long). */
export function parseTypedCount(typed: string | number | undefined): number | undefined {
  if (typed === undefined) return undefined;
  if (typeof typed === 'number') return Number.isSafeInteger(typed) && typed >= 0 && typed <= MAX_CONFIRM ? typed : undefined;
  const text = typed.trim();
  if (!/^\d{1,10}$/.test(text)) return undefined;
  const n = Number(text);
  return n <= MAX_CONFIRM ? n : undefined;
}

/** What is being confirmed. */
export interface ConfirmedChange {
  /** `plan #12`, `the plan`. */
  what: string;
  /** `approve` (a held plan), `apply` (`--force`). */
  verb: 'approve' | 'apply';
  /** The people it takes access from now. */
  disables: number;
  /** The count shown when it was held (a held plan's listing and page), if it may differ from now. */
  shown?: number | undefined;
}

/** Why the confirmation does not do (undefined: it does). `typed` as given: a number, a form's text, or nothing. */
export function confirmationProblem(change: ConfirmedChange, typed: string | number | undefined, ask: ConfirmationAsk): string | undefined {
  if (change.disables === 0) return undefined;
  const done = change.verb === 'approve' ? 'approved' : 'applied';
  const text = typed === undefined ? '' : String(typed).trim();
  if (text === '') {
    return `${change.what} takes access away from people: to ${change.verb} it, give ${ask.give}, the number of people who will lose access (${ask.shownBy} shows it)`;
  }
  const n = parseTypedCount(typed);
  if (n === change.disables) return undefined;
  if (n !== undefined && change.shown !== undefined && n === change.shown) {
    const people = `${change.disables} ${change.disables === 1 ? 'person' : 'people'}`;
    return `${change.what} took access away from ${change.shown} when it was held, and now would take it from ${people} (the platform or trainsync's record changed since): review it, then give ${ask.give} with the new number; nothing was ${done}`;
  }
  // The typed text is quoted as JSON (a hostile value prints as data) and cut short.
  const shown = JSON.stringify(text.length > 24 ? `${text.slice(0, 24)}…` : text);
  return `${shown} is not the number of people ${change.what} takes access away from: give ${ask.give} with that number (${ask.shownBy} shows it); nothing was ${done}`;
}

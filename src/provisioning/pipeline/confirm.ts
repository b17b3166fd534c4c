/**
 * Approving a held mass disable is deliberate: the person types the number of people who
 * will lose access (the console's field, `trainsync held --approve ID --confirm N`), and
 * the approval is refused unless it is that number. The message does not give the number
 * away: it says where to read it. Pure.
 */

export interface ConfirmationAsk {
  /** What the person must give: `--confirm N`, or the console's field. */
  give: string;
  /** Where the number is shown: `trainsync held`, the plan's page. */
  shownBy: string;
}

/** Why the confirmation does not do (undefined: it does). `typed` as given: a number, a form's text, or nothing. */
export function confirmationProblem(plan: { id: number; disables: number }, typed: string | number | undefined, ask: ConfirmationAsk): string | undefined {
  if (plan.disables === 0) return undefined;
  const text = typeof typed === 'number' ? String(typed) : (typed ?? '').trim();
  if (text === '') {
    return `plan #${plan.id} takes access away from people: to approve it, give ${ask.give}, the number of people who will lose access (${ask.shownBy} shows it)`;
  }
  if (!/^\d+$/.test(text) || Number(text) !== plan.disables) {
    return `${JSON.stringify(text)} is not the number of people plan #${plan.id} takes access away from: give ${ask.give} with that number (${ask.shownBy} shows it); nothing was approved`;
  }
  return undefined;
}

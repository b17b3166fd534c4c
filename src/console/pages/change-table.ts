import { isDeepStrictEqual } from 'node:util';
import { html, type SafeHtml } from '../html.ts';

/** An action's state before or after (a JSON object), or none (a create has no before). */
export type ActionStateView = object | null | undefined;

/** Keys of `after` that say why, not what: shown under the table, not as a field. */
const REASON_KEYS = ['repair'];

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * An id as a row can hold it: a UUID by its first eight characters (the whole in its tooltip
 * and `data-id`); a 36-character id wrapped over four lines made every audit row that tall.
 */
export function shortId(id: string): SafeHtml | string {
  return UUID.test(id) ? html`<span class="id" title="${id}" data-id="${id}">${id.slice(0, 8)}&hellip;</span>` : id;
}

/** A group by its name (training.groups), the GUID in its tooltip and `data-id`; by its short id when no groups sync has named it. */
export function groupCell(groupId: string, name: string | null | undefined): SafeHtml | string {
  return name ? html`<span class="group" title="${groupId}" data-id="${groupId}">${name}</span>` : shortId(groupId);
}

const shown = (value: unknown): SafeHtml | string => (value === undefined ? html`&mdash;` : typeof value === 'string' ? shortId(value) : JSON.stringify(value));

/**
 * An action's before → after as a table of fields (what an operator reads in the audit
 * trail): one row per field of either side, the changed ones marked (`class="changed"`,
 * the old value in <del>, the new in <ins>, so the change is in the markup, not only a colour).
 */
export function changeTable(beforeState: ActionStateView, afterState: ActionStateView): SafeHtml {
  const before = new Map(Object.entries(beforeState ?? {}));
  const after = new Map(Object.entries(afterState ?? {}));
  const fields = [...new Set([...before.keys(), ...after.keys()])].filter((k) => !REASON_KEYS.includes(k));
  const reasons = REASON_KEYS.map((k) => after.get(k)).filter((v): v is string => typeof v === 'string');
  const rows = fields.map((field) => {
    const was = before.get(field);
    const is = after.get(field);
    if (isDeepStrictEqual(was, is)) return html`<tr><th scope="row">${field}</th><td>${shown(was)}</td><td>${shown(is)}</td></tr>`;
    return html`<tr class="changed"><th scope="row">${field}</th><td>${was === undefined ? shown(was) : html`<del>${shown(was)}</del>`}</td><td>${is === undefined ? shown(is) : html`<ins>${shown(is)}</ins>`}</td></tr>`;
  });
  return html`<table class="change"><tr><th>field</th><th>before</th><th>after</th></tr>${rows}</table>${reasons.map((r) => html`<p class="why">Why: ${r}</p>`)}`;
}

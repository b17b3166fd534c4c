/**
 * `--max-disable` and TRAINSYNC_SCIM_MAX_DISABLE: how many disables a plan may hold, as a
 * number of employees or a percentage of the active ones. Here, beside the other settings
 * parsers, so src/config.ts and the commands read it the same way; the planner
 * (src/provisioning/plan/limits.ts) turns it into a number.
 */
export type MaxDisable = number | { percent: number };

/** Parses `--max-disable`: `"5"` → 5, `"10%"` → `{ percent: 10 }`. */
export function parseMaxDisable(text: string): MaxDisable {
  const value = text.trim();
  const percent = /^(\d+(?:\.\d+)?)\s*%$/.exec(value);
  if (percent) {
    const p = Number(percent[1]);
    if (p > 100) throw new Error(`--max-disable: ${JSON.stringify(text)} is over 100%; give a number of employees (e.g. 25) or a percentage up to 100% (e.g. 10%)`);
    return { percent: p };
  }
  if (/^\d+$/.test(value)) return Number(value);
  throw new Error(`--max-disable: ${JSON.stringify(text)} is neither a number of employees (e.g. 25) nor a percentage (e.g. 10%)`);
}

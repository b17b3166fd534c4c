import type { SimulatorSizes } from './dataset.ts';
import type { ApiCourse, ApiUser, DateBoundsMode, SimulatorState } from './state.ts';
import { addResult, markChanged } from './state.ts';
import type { WebhookSender, WebhookSettings } from './webhooks.ts';

/**
 * Several organisations on one simulated platform, one API key each (platform-api-notes:
 * "The key identifies one organisation and scopes all data to it"). Each has its own
 * generated data; the overlap option then makes what only several organisations can
 * show: course GUIDs listed by every organisation with a pass rate of its own, and one
 * user listed by two organisations.
 */

/** One organisation of the simulator: its key, and the dataset options one organisation had before. */
export interface OrganisationOptions {
  apiKey: string;
  /** The organisation's GUID; default: drawn from its seed. */
  id?: string;
  /** Shown in summaries and selects the organisation in `/__simulator/*?org=`. Default `Organisation N`. */
  name?: string;
  /** Default: the simulator's seed plus the organisation's position (0, 1, 2…). */
  seed?: number;
  sizes?: Partial<SimulatorSizes>;
  totalSeats?: number;
  unlimitedPlan?: boolean;
  usersEndpoint?: boolean;
  groupsEndpoint?: boolean;
  dateBounds?: DateBoundsMode;
  /** The users' e-mail domain ('@' included). Default: ORG_EMAIL_DOMAIN for the first, `@orgN.acme-training.example` after. */
  emailDomain?: string;
  /** This organisation's webhook target and secret (its own; never another organisation's). */
  webhooks?: Partial<WebhookSettings>;
}

/** What the overlap option makes (it needs two organisations or more). */
export interface OverlapOptions {
  /** Course GUIDs every organisation lists (the first organisation's first N courses). Default 3. */
  courses?: number;
  /** One user in the first two organisations (same GUID and e-mail). Default true. */
  sharedUser?: boolean;
}

export interface Overlap {
  /** Listed by every organisation, each with its own pass rate. */
  courseIds: string[];
  /** passRates[courseId][organisationId]. */
  passRates: Record<string, Record<string, number>>;
  /** The user the first two organisations both list, with results in each. */
  user: { id: string; email: string; organisationIds: [string, string] } | undefined;
}

/** One organisation as the running simulator holds it. */
export interface SimOrganisation {
  /** Position in the simulator's list, from 0. */
  readonly index: number;
  readonly id: string;
  readonly name: string;
  readonly apiKey: string;
  readonly state: SimulatorState;
  readonly webhooks: WebhookSender;
}

const PASS_RATES = [50, 60, 70, 75, 80, 100] as const;

/** A pass rate that differs between neighbouring organisations for the same course. */
function passRateFor(course: number, organisation: number): number {
  return PASS_RATES[(course + organisation) % PASS_RATES.length]!;
}

function replaceCourse(state: SimulatorState, position: number, shared: ApiCourse, passRate: number): void {
  const course: ApiCourse = { id: shared.id, name: shared.name, passRate, categories: shared.categories.map((c) => ({ ...c })) };
  const old = state.courses[position];
  if (old === undefined) state.courses.push(course);
  else state.courses[position] = course;
  const oldId = old?.id;
  for (const list of [state.results, state.undatedResults]) {
    for (const r of list) {
      if (r.courseId === oldId) r.courseId = course.id;
      if (r.courseId === course.id) r.passRate = passRate;
    }
  }
  for (const g of state.groups) {
    g.courses = g.courses.map((c) => (c.id === oldId ? { id: course.id, name: course.name } : c));
  }
}

/** Makes `target` (a user of `state`) the same person as `shared`; their results and memberships follow. */
function adoptUser(state: SimulatorState, target: ApiUser, shared: ApiUser): void {
  const oldId = target.id;
  state.usersById.delete(oldId);
  Object.assign(target, {
    id: shared.id,
    username: shared.username,
    email: shared.email,
    firstName: shared.firstName,
    lastName: shared.lastName,
    birthYear: shared.birthYear,
    gender: shared.gender,
    accountType: shared.accountType,
    deletionStatus: shared.deletionStatus,
  });
  state.usersById.set(target.id, target);
  const account = state.accounts.get(oldId);
  if (account) {
    state.accounts.delete(oldId);
    state.accounts.set(target.id, account);
  }
  for (const list of [state.results, state.undatedResults]) for (const r of list) if (r.userId === oldId) r.userId = target.id;
  for (const g of state.groups) {
    if (g.memberIds.delete(oldId)) g.memberIds.add(target.id);
  }
}

function ensureResultFor(state: SimulatorState, userId: string): void {
  if (state.results.some((r) => r.userId === userId) || state.undatedResults.some((r) => r.userId === userId)) return;
  const course = state.courses[0];
  if (!course) return;
  addResult(state, { userId, courseId: course.id, passRate: course.passRate });
}

/** Applies the overlap to freshly generated organisations (before any page is served). */
export function applyOverlap(states: readonly SimulatorState[], options: OverlapOptions = {}): Overlap {
  if (states.length < 2) throw new Error('the overlap option needs two organisations or more');
  const first = states[0]!;
  const n = Math.min(options.courses ?? 3, first.courses.length);
  const shared = first.courses.slice(0, n).map((c) => ({ ...c }));
  const passRates: Overlap['passRates'] = {};
  states.forEach((state, k) => {
    shared.forEach((course, j) => {
      const rate = passRateFor(j, k);
      replaceCourse(state, j, course, rate);
      (passRates[course.id] ??= {})[state.organisationId] = rate;
    });
  });

  let user: Overlap['user'];
  const second = states[1]!;
  if (options.sharedUser ?? true) {
    // Not an API account: "an account created through the API belongs to exactly one organisation".
    const position = first.users.findIndex((u) => u.role === 'USER' && u.accountType === 'API');
    const original = position < 0 ? undefined : first.users[position];
    if (original && second.users.length > 0) {
      original.accountType = 'INVITE';
      original.deletionStatus = 'USER_IN_OTHER_ORG';
      adoptUser(second, second.users[Math.min(position, second.users.length - 1)]!, original);
      ensureResultFor(first, original.id);
      ensureResultFor(second, original.id);
      user = { id: original.id, email: original.email, organisationIds: [first.organisationId, second.organisationId] };
    }
  }
  // Results were edited in place: drop any serialised copy and expire cached pages.
  for (const state of states) markChanged(state);
  return { courseIds: shared.map((c) => c.id), passRates, user };
}

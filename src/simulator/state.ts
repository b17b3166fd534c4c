import type { Prng } from './prng.ts';

/**
 * The simulator's live data, held as the API-shaped objects the platform returns
 * (camelCase, GUID strings), plus the few indexes and flags the server needs.
 * Mutate it only through the helpers below: they keep the sort order, the indexes
 * and the serialisation cache right, and bump `version` so cached pages expire.
 */

export interface ApiCourseCategory {
  type: string;
  name: string;
}
export interface ApiCourse {
  id: string;
  name: string;
  passRate: number | null;
  categories: ApiCourseCategory[];
}
export interface ApiFilterAnswer {
  id: string;
  answer: string;
}
export interface ApiFilter {
  id: string;
  name: string;
  answers: ApiFilterAnswer[];
}
export interface ApiUser {
  id: string;
  username: string;
  email: string;
  firstName: string;
  lastName: string;
  birthYear: number;
  gender: string;
  role: 'USER' | 'ADMIN';
  organisationIdentifier: string | null;
  hasAccess: boolean;
  usingSeat: boolean;
  accountType: 'API' | 'SSO' | 'INVITE';
  deletionStatus: string;
  userFilters: string[];
}
/** What the platform knows about a password: never the password itself. */
export interface UserAccount {
  passwordSet: boolean;
  passwordChanges: number;
  /** Locked out of this organisation's training: log-in links answer USER_LOCKOUT. */
  locked: boolean;
}
export interface ApiGroupCourse {
  id: string;
  name: string;
}
export interface SimGroup {
  id: string;
  name: string;
  courses: ApiGroupCourse[];
  /** Not part of the API's group object; membership is only visible through results. */
  memberIds: Set<string>;
}
export interface ApiResult {
  id: string;
  userId: string;
  courseId: string;
  multiCourseResultId: string | null;
  isComplete: boolean;
  dateCompleted: string | null;
  score: number | null;
  maximumScore: number | null;
  passRate: number | null;
  courseType: string;
  resultFilters: string[];
  /** The platform adds fields without notice (e.g. `certificateUrl`). */
  [extra: string]: unknown;
}

/** `date-only`: the seed's reading, dates inclusive, and a date-time refused with 400 INVALID_MODEL. */
export type DateBoundsMode = 'exclusive-instant' | 'inclusive-date' | 'date-only';

export interface ResultMeta {
  /** dateCompleted in epoch ms; null for undated (incomplete) results. */
  t: number | null;
  /** Creation order, stable for the result's life: drives the malformed-record fault. */
  seq: number;
  json: string | undefined;
}

export interface SimulatorState {
  readonly seed: number;
  readonly organisationId: string;
  /** Ids of things created later (users, drift results) come from here: same calls, same ids. */
  readonly prng: Prng;
  readonly resultsFrom: string;
  readonly resultsTo: string;
  courses: ApiCourse[];
  filters: ApiFilter[];
  /** In creation order, which is the order GET users lists them. */
  users: ApiUser[];
  accounts: Map<string, UserAccount>;
  groups: SimGroup[];
  /** Dated results, sorted by dateCompleted then id. */
  results: ApiResult[];
  /** Incomplete results (dateCompleted null), in creation order; listed only by undated queries. */
  undatedResults: ApiResult[];
  seats: { totalSeats: number; unlimitedPlan: boolean };
  usersEndpoint: boolean;
  /** false: GET groups answers 404, as on a platform without it. */
  groupsEndpoint: boolean;
  dateBounds: DateBoundsMode;
  /** Bumped on every change; cached pages and filter lists key on it. */
  version: number;
  readonly resultMeta: WeakMap<ApiResult, ResultMeta>;
  readonly resultsById: Map<string, ApiResult>;
  readonly usersById: Map<string, ApiUser>;
  nextSeq: number;
}

/** Epoch ms of a dateCompleted value, or throws: the simulator never stores an unreadable date. */
export function instantMs(value: string): number {
  const t = Date.parse(value);
  if (Number.isNaN(t)) throw new Error(`not a timestamp: ${value}`);
  return t;
}

export function metaOf(state: SimulatorState, result: ApiResult): ResultMeta {
  const meta = state.resultMeta.get(result);
  if (!meta) throw new Error(`result ${result.id} is not in the simulator state (mutate through the helpers)`);
  return meta;
}

function compareDated(state: SimulatorState, a: ApiResult, b: ApiResult): number {
  const ta = metaOf(state, a).t!;
  const tb = metaOf(state, b).t!;
  if (ta !== tb) return ta - tb;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/** First index in a sorted list whose element is not before `item`. */
function insertionIndex(list: ApiResult[], item: ApiResult, cmp: (a: ApiResult, b: ApiResult) => number): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (cmp(list[mid]!, item) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Undated results list in creation order, so a result started now comes last. */
const bySeq = (state: SimulatorState) => (a: ApiResult, b: ApiResult): number => metaOf(state, a).seq - metaOf(state, b).seq;

/** Places a result (whose meta is set) into the sorted lists and the id index. */
export function insertResultSorted(state: SimulatorState, result: ApiResult): void {
  const meta = metaOf(state, result);
  if (meta.t === null) {
    state.undatedResults.splice(insertionIndex(state.undatedResults, result, bySeq(state)), 0, result);
  } else {
    const cmp = (a: ApiResult, b: ApiResult): number => compareDated(state, a, b);
    state.results.splice(insertionIndex(state.results, result, cmp), 0, result);
  }
  state.resultsById.set(result.id, result);
}

function unlinkResult(state: SimulatorState, result: ApiResult): void {
  const meta = metaOf(state, result);
  const list = meta.t === null ? state.undatedResults : state.results;
  const cmp = meta.t === null ? bySeq(state) : (a: ApiResult, b: ApiResult): number => compareDated(state, a, b);
  let i = insertionIndex(list, result, cmp);
  // Equal keys are impossible (ids are unique) but fall back to a scan rather than corrupt the list.
  if (list[i] !== result) i = list.indexOf(result);
  if (i >= 0) list.splice(i, 1);
  state.resultsById.delete(result.id);
}

/** Registers a brand-new result object (bulk loaders skip the sorted insert and sort once). */
export function registerResultMeta(state: SimulatorState, result: ApiResult): ResultMeta {
  const meta: ResultMeta = {
    t: result.dateCompleted === null ? null : instantMs(result.dateCompleted),
    seq: state.nextSeq++,
    json: undefined,
  };
  state.resultMeta.set(result, meta);
  return meta;
}

/** The result's JSON, serialised once and reused by every page that shows it. */
export function resultJson(state: SimulatorState, result: ApiResult): string {
  const meta = metaOf(state, result);
  if (meta.json === undefined) meta.json = JSON.stringify(result);
  return meta.json;
}

function touch(state: SimulatorState): void {
  state.version++;
}

/** Adds a result; missing fields get plausible values. Returns the stored object. */
export function addResult(state: SimulatorState, partial: Partial<ApiResult> = {}): ApiResult {
  const course = state.courses[0];
  const user = state.users[0];
  const dateCompleted = partial.dateCompleted === undefined ? new Date(Date.parse(`${state.resultsTo}T12:00:00.000Z`)).toISOString() : partial.dateCompleted;
  const result: ApiResult = {
    id: state.prng.guid(),
    userId: user?.id ?? state.prng.guid(),
    courseId: course?.id ?? state.prng.guid(),
    multiCourseResultId: null,
    isComplete: dateCompleted !== null,
    dateCompleted,
    score: dateCompleted === null ? null : 80,
    maximumScore: 100,
    passRate: course?.passRate ?? null,
    courseType: 'SINGLE_COURSE',
    resultFilters: [],
    ...partial,
  };
  if (state.resultsById.has(result.id)) throw new Error(`result ${result.id} already exists`);
  registerResultMeta(state, result);
  insertResultSorted(state, result);
  touch(state);
  return result;
}

/** Replaces a result with `{...old, ...patch}` (the id cannot change); re-sorts when the date moves. */
export function updateResult(state: SimulatorState, id: string, patch: Partial<ApiResult>): ApiResult {
  const old = state.resultsById.get(id.toLowerCase());
  if (!old) throw new Error(`no result ${id}`);
  const oldMeta = metaOf(state, old);
  unlinkResult(state, old);
  const next: ApiResult = { ...old, ...patch, id: old.id };
  state.resultMeta.set(next, {
    t: next.dateCompleted === null ? null : instantMs(next.dateCompleted),
    seq: oldMeta.seq,
    json: undefined,
  });
  insertResultSorted(state, next);
  touch(state);
  return next;
}

/** Deletes a result; returns whether it existed. */
export function removeResult(state: SimulatorState, id: string): boolean {
  const old = state.resultsById.get(id.toLowerCase());
  if (!old) return false;
  unlinkResult(state, old);
  touch(state);
  return true;
}

export function getResult(state: SimulatorState, id: string): ApiResult | undefined {
  return state.resultsById.get(id.toLowerCase());
}

/** Every result: dated in date order, then the undated ones. */
export function allResults(state: SimulatorState): ApiResult[] {
  return [...state.results, ...state.undatedResults];
}

export function addCourse(state: SimulatorState, partial: Partial<ApiCourse> = {}): ApiCourse {
  const course: ApiCourse = {
    id: state.prng.guid(),
    name: `Course ${state.courses.length + 1}`,
    passRate: 70,
    categories: [{ type: 'TOPIC', name: 'General' }],
    ...partial,
  };
  state.courses.push(course);
  touch(state);
  return course;
}

export function updateCourse(state: SimulatorState, id: string, patch: Partial<ApiCourse>): ApiCourse {
  const i = state.courses.findIndex((c) => c.id === id.toLowerCase());
  if (i < 0) throw new Error(`no course ${id}`);
  const next: ApiCourse = { ...state.courses[i]!, ...patch, id: state.courses[i]!.id };
  state.courses[i] = next;
  touch(state);
  return next;
}

/** Removes a course from GET courses (its results stay, as on the platform). */
export function removeCourse(state: SimulatorState, id: string): boolean {
  const i = state.courses.findIndex((c) => c.id === id.toLowerCase());
  if (i < 0) return false;
  state.courses.splice(i, 1);
  touch(state);
  return true;
}

export function addFilter(state: SimulatorState, name: string, answers: string[]): ApiFilter {
  const filter: ApiFilter = { id: state.prng.guid(), name, answers: answers.map((answer) => ({ id: state.prng.guid(), answer })) };
  state.filters.push(filter);
  touch(state);
  return filter;
}

export function removeFilter(state: SimulatorState, id: string): boolean {
  const i = state.filters.findIndex((f) => f.id === id.toLowerCase());
  if (i < 0) return false;
  state.filters.splice(i, 1);
  touch(state);
  return true;
}

/** A user by GUID or e-mail (case-insensitive), as `userIdentifier` accepts both. */
export function findUser(state: SimulatorState, identifier: string): ApiUser | undefined {
  const key = identifier.trim().toLowerCase();
  const byGuid = state.usersById.get(key);
  if (byGuid) return byGuid;
  return state.users.find((u) => u.email.toLowerCase() === key);
}

export function userAccount(state: SimulatorState, userId: string): UserAccount {
  let account = state.accounts.get(userId);
  if (!account) {
    account = { passwordSet: false, passwordChanges: 0, locked: false };
    state.accounts.set(userId, account);
  }
  return account;
}

/** Marks a user locked out (log-in links then answer USER_LOCKOUT). */
export function setUserLocked(state: SimulatorState, identifier: string, locked: boolean): void {
  const user = findUser(state, identifier);
  if (!user) throw new Error(`no user ${identifier}`);
  userAccount(state, user.id).locked = locked;
}

/** Sets a user's access as disable/enable would, keeping `usingSeat` consistent. */
export function setUserAccess(state: SimulatorState, user: ApiUser, hasAccess: boolean): void {
  if (user.hasAccess === hasAccess) return;
  user.hasAccess = hasAccess;
  user.usingSeat = hasAccess && state.seats.unlimitedPlan;
  touch(state);
}

export function seatsInUse(state: SimulatorState): number {
  let n = 0;
  for (const u of state.users) if (u.hasAccess) n++;
  return n;
}

export function findGroup(state: SimulatorState, id: string): SimGroup | undefined {
  const key = id.trim().toLowerCase();
  return state.groups.find((g) => g.id === key);
}

/** Adds a group (no members); missing fields get plausible values. */
export function addGroup(state: SimulatorState, partial: Partial<Omit<SimGroup, 'memberIds'>> = {}): SimGroup {
  const group: SimGroup = {
    id: state.prng.guid(),
    name: `Group ${state.groups.length + 1}`,
    courses: state.courses.slice(0, 2).map((c) => ({ id: c.id, name: c.name })),
    ...partial,
    memberIds: new Set(),
  };
  if (findGroup(state, group.id)) throw new Error(`group ${group.id} already exists`);
  state.groups.push(group);
  touch(state);
  return group;
}

/** Renames a group or replaces its courses (members stay). */
export function updateGroup(state: SimulatorState, id: string, patch: Partial<Pick<SimGroup, 'name' | 'courses'>>): SimGroup {
  const group = findGroup(state, id);
  if (!group) throw new Error(`no group ${id}`);
  if (patch.name !== undefined) group.name = patch.name;
  if (patch.courses !== undefined) group.courses = patch.courses.map((c) => ({ id: c.id, name: c.name }));
  touch(state);
  return group;
}

/** Removes a group from GET groups (membership calls then answer GROUP_NOT_FOUND). */
export function removeGroup(state: SimulatorState, id: string): boolean {
  const i = state.groups.findIndex((g) => g.id === id.trim().toLowerCase());
  if (i < 0) return false;
  state.groups.splice(i, 1);
  touch(state);
  return true;
}

export function groupMembers(state: SimulatorState, groupId: string): string[] {
  const group = findGroup(state, groupId);
  if (!group) throw new Error(`no group ${groupId}`);
  return [...group.memberIds];
}

/** Adds or removes a member (returns whether anything changed). */
export function setGroupMember(state: SimulatorState, groupId: string, userId: string, member: boolean): boolean {
  const group = findGroup(state, groupId);
  if (!group) throw new Error(`no group ${groupId}`);
  const had = group.memberIds.has(userId);
  if (had === member) return false;
  if (member) group.memberIds.add(userId);
  else group.memberIds.delete(userId);
  touch(state);
  return true;
}

/**
 * Marks the data changed after a direct edit of the state's objects, so cached pages
 * and serialised results expire (a date edited in place also needs `updateResult`).
 */
export function markChanged(state: SimulatorState): void {
  for (const r of state.results) metaOf(state, r).json = undefined;
  for (const r of state.undatedResults) metaOf(state, r).json = undefined;
  touch(state);
}

import { createPrng } from './prng.ts';
import type { ApiCourse, ApiFilter, ApiResult, ApiUser, DateBoundsMode, SimGroup, SimulatorState } from './state.ts';
import { instantMs } from './state.ts';

/** How much data the simulated organisation holds. */
export interface SimulatorSizes {
  /** Default 40. */
  courses: number;
  /** Default 4. */
  filters: number;
  /** Default 5. */
  answersPerFilter: number;
  /** Default 300. */
  users: number;
  /** Default 5. */
  groups: number;
  /** Default 3000. */
  results: number;
  /** First day results are dated on (YYYY-MM-DD, UTC). Default '2024-01-01'. */
  resultsFrom: string;
  /** Last day results are dated on (inclusive). Default '2024-12-31'. */
  resultsTo: string;
}

export const DEFAULT_SIZES: Readonly<SimulatorSizes> = Object.freeze({
  courses: 40,
  filters: 4,
  answersPerFilter: 5,
  users: 300,
  groups: 5,
  results: 3000,
  resultsFrom: '2024-01-01',
  resultsTo: '2024-12-31',
});

export interface DatasetOptions {
  seed: number;
  sizes: SimulatorSizes;
  /** Default users + 50. */
  totalSeats?: number;
  unlimitedPlan: boolean;
  usersEndpoint: boolean;
  /** Default true; false => GET groups answers 404 (a platform without it). */
  groupsEndpoint?: boolean;
  dateBounds: DateBoundsMode;
  /** The organisation's GUID; default: the seed's first GUID (so the data stays what the seed gives). */
  organisationId?: string;
  /** The users' e-mail domain, '@' included. Default ORG_EMAIL_DOMAIN; each organisation needs its own (e-mails are unique platform-wide). */
  emailDomain?: string;
}

const TOPICS = ['Fire Safety', 'Data Protection', 'Manual Handling', 'Anti-Bribery', 'First Aid', 'Cyber Security', 'Equality and Diversity', 'Food Hygiene', 'Customer Care', 'Leadership', 'Time Management', 'Risk Assessment', 'Working at Height', 'Display Screen Equipment', 'Safeguarding', 'Conflict Resolution'];
const LEVELS = ['Essentials', 'Refresher', 'Advanced', 'for Managers', 'Awareness'];
const CATEGORY_NAMES: Record<string, readonly string[]> = {
  SUBJECT: ['Compliance', 'Health & Safety', 'Soft Skills', 'IT', 'Management'],
  DEPARTMENT: ['Operations', 'Sales', 'HR', 'Finance', 'Engineering'],
  LEVEL: ['Beginner', 'Intermediate', 'Expert'],
};
const FILTERS: ReadonlyArray<readonly [string, readonly string[]]> = [
  ['Department', ['Operations', 'Sales', 'HR', 'Finance', 'Engineering', 'Legal', 'Marketing']],
  ['Location', ['London', 'Leeds', 'Glasgow', 'Cardiff', 'Belfast', 'Remote', 'Dublin']],
  ['Job Level', ['Associate', 'Senior', 'Lead', 'Manager', 'Director', 'Executive', 'Intern']],
  ['Contract', ['Permanent', 'Fixed Term', 'Contractor', 'Part Time', 'Seasonal', 'Agency', 'Apprentice']],
];
const FIRST = ['Amara', 'Ben', 'Chloe', 'Dev', 'Elena', 'Farah', 'George', 'Hana', 'Ivan', 'Jade', 'Kofi', 'Lena', 'Marco', 'Nina', 'Omar', 'Priya', 'Quinn', 'Rosa', 'Sam', 'Tariq', 'Uma', 'Victor', 'Wen', 'Yusuf', 'Zoe'];
const LAST = ['Adams', 'Brown', 'Chen', 'Davies', 'Evans', 'Fischer', 'Garcia', 'Hughes', 'Iqbal', 'Jones', 'Kowalski', 'Lopez', 'Murphy', 'Nowak', "O'Neill", 'Patel', 'Rossi', 'Smith', 'Taylor', 'Walsh'];
const GROUPS = ['Sales', 'Engineering', 'Warehouse', 'Head Office', 'New Starters', 'Managers', 'Contractors', 'Field Staff'];

/** The organisation's users' e-mail domain. */
export const ORG_EMAIL_DOMAIN = '@acme-training.example';

/** Builds the organisation's data; the same seed and sizes always give the same state. */
export function generateState(options: DatasetOptions): SimulatorState {
  const { sizes } = options;
  const rng = createPrng(options.seed);
  // Drawn even when overridden, so the rest of the data is what the seed gives.
  const seedOrganisationId = rng.guid();
  const organisationId = options.organisationId?.toLowerCase() ?? seedOrganisationId;
  const emailDomain = options.emailDomain ?? ORG_EMAIL_DOMAIN;

  const courses: ApiCourse[] = [];
  for (let i = 0; i < sizes.courses; i++) {
    const base = `${TOPICS[i % TOPICS.length]} ${LEVELS[Math.floor(i / TOPICS.length) % LEVELS.length]}`;
    const round = Math.floor(i / (TOPICS.length * LEVELS.length));
    const types = Object.keys(CATEGORY_NAMES);
    const count = rng.int(1, 3);
    const start = rng.int(0, types.length - 1);
    const categories = Array.from({ length: count }, (_, k) => {
      const type = types[(start + k) % types.length]!;
      return { type, name: rng.pick(CATEGORY_NAMES[type]!) };
    });
    courses.push({
      id: rng.guid(),
      name: round === 0 ? base : `${base} ${round + 1}`,
      passRate: rng.chance(0.15) ? null : rng.pick([50, 60, 70, 75, 80, 100]),
      categories,
    });
  }

  const filters: ApiFilter[] = [];
  for (let i = 0; i < sizes.filters; i++) {
    const [name, answers] = FILTERS[i % FILTERS.length]!;
    const suffix = i < FILTERS.length ? '' : ` ${Math.floor(i / FILTERS.length) + 1}`;
    filters.push({
      id: rng.guid(),
      name: `${name}${suffix}`,
      answers: Array.from({ length: sizes.answersPerFilter }, (_, k) => ({
        id: rng.guid(),
        answer: k < answers.length ? answers[k]! : `${answers[k % answers.length]} ${Math.floor(k / answers.length) + 1}`,
      })),
    });
  }

  const users: ApiUser[] = [];
  for (let i = 0; i < sizes.users; i++) {
    const first = rng.pick(FIRST);
    const last = rng.pick(LAST);
    const email = `${first}.${last.replace(/'/g, '')}${i + 1}${emailDomain}`.toLowerCase();
    // A few SSO accounts: PUT users and POST users/password refuse them (INVALID_USER_TYPE).
    const sso = i % 37 === 36;
    const hasAccess = !rng.chance(0.08);
    const userFilters: string[] = [];
    for (const f of filters) if (f.answers.length > 0 && rng.chance(0.8)) userFilters.push(rng.pick(f.answers).id);
    users.push({
      id: rng.guid(),
      username: sso ? `sso|${rng.guid().replace(/-/g, '')}` : email,
      email,
      firstName: first,
      lastName: last,
      birthYear: rng.chance(0.5) ? -1 : rng.int(1960, 2004),
      gender: rng.pick(['UNKNOWN', 'FEMALE', 'MALE', 'OTHER']),
      role: i % 50 === 0 ? 'ADMIN' : 'USER',
      organisationIdentifier: `E${String(i + 1).padStart(6, '0')}`,
      hasAccess,
      usingSeat: hasAccess && options.unlimitedPlan,
      accountType: sso ? 'SSO' : 'API',
      deletionStatus: 'CAN_DELETE',
      userFilters,
    });
  }

  const groups: SimGroup[] = [];
  for (let i = 0; i < sizes.groups; i++) {
    const groupCourses = courses.length === 0 ? [] : Array.from({ length: Math.min(courses.length, rng.int(2, 6)) }, () => rng.pick(courses));
    const unique = [...new Map(groupCourses.map((c) => [c.id, { id: c.id, name: c.name }])).values()];
    const memberIds = new Set<string>();
    for (const u of users) if (rng.chance(0.2)) memberIds.add(u.id);
    groups.push({
      id: rng.guid(),
      name: i < GROUPS.length ? GROUPS[i]! : `Group ${i + 1}`,
      courses: unique,
      memberIds,
    });
  }

  const state: SimulatorState = {
    seed: options.seed,
    organisationId,
    // A separate stream for later ids, so they do not depend on the data's size.
    prng: createPrng((options.seed ^ 0x5eed5eed) >>> 0),
    resultsFrom: sizes.resultsFrom,
    resultsTo: sizes.resultsTo,
    courses,
    filters,
    users,
    accounts: new Map(),
    groups,
    results: [],
    undatedResults: [],
    seats: { totalSeats: options.totalSeats ?? sizes.users + 50, unlimitedPlan: options.unlimitedPlan },
    usersEndpoint: options.usersEndpoint,
    groupsEndpoint: options.groupsEndpoint ?? true,
    dateBounds: options.dateBounds,
    version: 1,
    resultMeta: new WeakMap(),
    resultsById: new Map(),
    usersById: new Map(users.map((u) => [u.id, u])),
    nextSeq: 1,
  };

  const from = instantMs(`${sizes.resultsFrom}T00:00:00.000Z`);
  const to = instantMs(`${sizes.resultsTo}T00:00:00.000Z`) + 86_400_000 - 1;
  if (to < from) throw new Error(`resultsTo ${sizes.resultsTo} is before resultsFrom ${sizes.resultsFrom}`);
  const dated: Array<{ r: ApiResult; t: number }> = [];
  for (let i = 0; i < sizes.results && users.length > 0 && courses.length > 0; i++) {
    const user = rng.pick(users);
    const course = rng.pick(courses);
    const complete = rng.chance(0.9);
    const t = from + Math.floor(rng.next() * (to - from + 1));
    const maximumScore = rng.pick([10, 20, 50, 100]);
    const nFilters = Math.min(user.userFilters.length, rng.int(0, 2));
    const resultFilters = nFilters === 0 ? [] : [...new Set(Array.from({ length: nFilters }, () => rng.pick(user.userFilters)))];
    const result: ApiResult = {
      id: rng.guid(),
      userId: user.id,
      courseId: course.id,
      multiCourseResultId: rng.chance(0.08) ? rng.guid() : null,
      isComplete: complete,
      dateCompleted: complete ? new Date(t).toISOString() : null,
      score: complete ? rng.int(0, maximumScore) : null,
      maximumScore,
      passRate: course.passRate,
      courseType: 'SINGLE_COURSE',
      resultFilters,
    };
    // Some records carry a field the docs do not list: clients must accept it.
    if (rng.chance(0.05)) result.certificateUrl = `https://certificates.example/${result.id}.pdf`;
    state.resultMeta.set(result, { t: complete ? t : null, seq: state.nextSeq++, json: undefined });
    state.resultsById.set(result.id, result);
    if (complete) dated.push({ r: result, t });
    else state.undatedResults.push(result);
  }
  dated.sort((a, b) => a.t - b.t || (a.r.id < b.r.id ? -1 : a.r.id > b.r.id ? 1 : 0));
  state.results = dated.map((d) => d.r);
  // Undated results stay in creation order (their seq order), as insertResultSorted keeps them.
  return state;
}

import { actionId } from './action-id.ts';
import { JSON_ENTRIES, JSON_ITEMS, type JsonEntries, type JsonItems } from '../../lib/json-stream.ts';
import { ChunkedColumn, float64Column, int32Column, uint32Column, uint8Column } from '../../lib/typed-column.ts';
import type { FeedRole } from '../feed/types.ts';
import { ACTION_KINDS, type ActionKind, type ActionState, type PlannedAction } from './action.ts';

/**
 * A plan's actions, held by column: a first run of a 300,000-row feed plans some 875,000
 * actions, and as one object each (with its id, its states and a per-person index) they
 * took 210 MB; here they take about 25 (docs/benchmarks.md, "A large HR feed"). An action
 * is a byte of flags (its kind, how it reads back), who it is for (a person: id, e-mail,
 * platform user and version, shared by that person's actions) and one number more: its
 * group for a group change, its new account's state for a create. The rest follows from
 * the kind, as the planner plans it: a disable takes an account from active to inactive,
 * an add-to-group a membership from absent (or unknown, when re-asserted) to present,
 * group changes come after the account's own (`seq` 1). The id is not stored either: it is
 * `actionId` of those fields, computed when read. An action is read back as the plain
 * `PlannedAction` it was planned as, fields in the order the planner wrote them, so JSON
 * of a plan is what it was when the actions were objects.
 *
 * Actions that do not fit that form (a held plan's, read back from Postgres) are kept as
 * they are. Read-only once built: nothing changes a planned action.
 */

/** Field order of an action read back: `kind` first (a joiner's, a leaver's), or the person's fields first (a known employee's). */
export type ActionLayout = 'kind-first' | 'person-first';

/** Everything of an action but its id (which is derived from these). */
export type ActionFields = Omit<PlannedAction, 'id'>;

const KIND_INDEX = new Map<ActionKind, number>(ACTION_KINDS.map((kind, i) => [kind, i]));
/** Bits of `flags`: the kind's index (0–4), the layout, an action kept whole, a membership re-asserted (its before is unknown). */
const KIND_MASK = 0b111;
const PERSON_FIRST = 0b1000;
const WHOLE = 0b10000;
const BEFORE_UNKNOWN = 0b100000;
const ROLE_STATES: readonly FeedRole[] = ['USER', 'ADMIN'];

/** What each kind of action moves, as the planner plans it (plan.ts): one frozen instance each, never changed. */
export const MEMBER_NO: ActionState = Object.freeze({ member: false });
export const MEMBER_YES: ActionState = Object.freeze({ member: true });
export const ACTIVE_YES: ActionState = Object.freeze({ active: true });
export const ACTIVE_NO: ActionState = Object.freeze({ active: false });
const IMPLIED: Readonly<Record<Exclude<ActionKind, 'create-user'>, { seq: number; before: ActionState; after: ActionState }>> = {
  enable: { seq: 0, before: ACTIVE_NO, after: ACTIVE_YES },
  disable: { seq: 0, before: ACTIVE_YES, after: ACTIVE_NO },
  'add-to-group': { seq: 1, before: MEMBER_NO, after: MEMBER_YES },
  'remove-from-group': { seq: 1, before: MEMBER_YES, after: MEMBER_NO },
};

/** Whether `state` is `implied` (by value: one field, the same value). */
function sameState(state: ActionState | null, implied: ActionState): boolean {
  if (state === implied) return true;
  if (state === null) return false;
  const keys = Object.keys(state);
  const key = Object.keys(implied)[0] as keyof ActionState;
  return keys.length === 1 && keys[0] === key && state[key] === implied[key];
}

/** Whether an employee id orders before the others as a key of a plain object: an array index ("0", "17"), in numeric order. */
function isIndexKey(key: string): boolean {
  if (key === '0') return true;
  if (!/^[1-9]\d{0,9}$/.test(key)) return false;
  return Number(key) < 4_294_967_295;
}

/**
 * Each employee's actions, in plan order: the index the pipeline enqueues by (one chain of
 * jobs per person) and that JSON shows as `byEmployee`. Built when first asked for (a dry
 * run that prints counts never needs it). Employees come in the order a plain object keyed
 * by their ids lists them: ids that are array indexes first, by number, then the others as
 * first planned; that was the order when this was such an object.
 */
export class PlanEmployees implements JsonEntries {
  /** Employee id → slot; per slot its first and last action; per action the next of the same employee (-1: none). */
  private slots: Map<string, number> | undefined;
  private readonly firsts = int32Column();
  private readonly lasts = int32Column();
  private readonly next = int32Column();

  constructor(private readonly actions: PlanActions) {}

  private index(): Map<string, number> {
    if (this.slots !== undefined) return this.slots;
    const slots = new Map<string, number>();
    for (let i = 0; i < this.actions.length; i += 1) {
      this.next.push(-1);
      const employeeId = this.actions.employeeIdAt(i);
      const slot = slots.get(employeeId);
      if (slot === undefined) {
        slots.set(employeeId, this.firsts.length);
        this.firsts.push(i);
        this.lasts.push(i);
      } else {
        this.next.set(this.lasts.at(slot), i);
        this.lasts.set(slot, i);
      }
    }
    this.slots = slots;
    return slots;
  }

  /** How many employees the plan has actions for. */
  get size(): number {
    return this.index().size;
  }

  has(employeeId: string): boolean {
    return this.index().has(employeeId);
  }

  /** The employees, in the order of a plain object's keys (see the class comment). */
  keys(): string[] {
    const all = [...this.index().keys()];
    const numeric = all.filter(isIndexKey);
    if (numeric.length === 0) return all;
    numeric.sort((a, b) => Number(a) - Number(b));
    return [...numeric, ...all.filter((key) => !isIndexKey(key))];
  }

  /** Positions of one employee's actions in the plan, in plan order. */
  positions(employeeId: string): number[] {
    const slot = this.index().get(employeeId);
    if (slot === undefined) return [];
    const out: number[] = [];
    for (let i = this.firsts.at(slot); i >= 0; i = this.next.at(i)) out.push(i);
    return out;
  }

  /** One employee's actions, in plan order (none: empty). */
  get(employeeId: string): PlannedAction[] {
    return this.positions(employeeId).map((i) => this.actions.at(i)!);
  }

  /** [employee, actions] in the order of `keys()`, each employee's actions read when reached. */
  *entries(): IterableIterator<[string, PlannedAction[]]> {
    for (const key of this.keys()) yield [key, this.get(key)];
  }

  /** Written one employee at a time (lib/json-stream.ts), the same text as toJSON's. */
  [JSON_ENTRIES](): Iterable<readonly [string, PlannedAction[]]> {
    return this.entries();
  }

  /** As a plain object, as JSON shows it. */
  toJSON(): Record<string, PlannedAction[]> {
    const out: Record<string, PlannedAction[]> = {};
    // Own keys only: an employee id `constructor` or `__proto__` is a key like any other.
    for (const key of this.index().keys()) Object.defineProperty(out, key, { value: this.get(key), enumerable: true, writable: true, configurable: true });
    return out;
  }
}

/** See the module comment. */
export class PlanActions implements Iterable<PlannedAction>, JsonItems {
  private count = 0;
  private readonly flags = uint8Column();
  private readonly people = uint32Column();
  /** A group change's group (in `groupIds`), a create's state (in the create columns); else -1. */
  private readonly args = int32Column();
  /** Per person: consecutive actions with the same four fields share one. */
  private readonly employeeIds = new ChunkedColumn<string>();
  private readonly emails = new ChunkedColumn<string>();
  /** null (most: no account yet) as undefined, which takes no room. */
  private readonly platformUserIds = new ChunkedColumn<string | undefined>();
  private readonly versions = float64Column();
  /** Interned group ids. */
  private readonly groupIds: string[] = [];
  private readonly groupIndex = new Map<string, number>();
  /** A new account's state (`create-user`'s after), by column; its e-mail and organisation id only when they differ from the person's e-mail and id. */
  private readonly createEmails = new ChunkedColumn<string | undefined>();
  private readonly createFirstNames = new ChunkedColumn<string>();
  private readonly createLastNames = new ChunkedColumn<string>();
  private readonly createRoles = uint8Column();
  private readonly createOrgIds = new ChunkedColumn<string | undefined>();
  private readonly repairs = new Map<number, string>();
  /** Actions kept as they came (see the module comment). */
  private readonly whole = new Map<number, PlannedAction>();
  private employeesView: PlanEmployees | undefined;

  /** Actions that were objects already (a held plan's), in their order. */
  static of(actions: Iterable<PlannedAction>): PlanActions {
    const out = new PlanActions();
    for (const action of actions) out.addWhole(action);
    return out;
  }

  get length(): number {
    return this.count;
  }

  /** Each employee's actions (`byEmployee`). */
  get byEmployee(): PlanEmployees {
    this.employeesView ??= new PlanEmployees(this);
    return this.employeesView;
  }

  /** Appends one planned action; `layout` is the order its fields are read back in. */
  add(fields: ActionFields, layout: ActionLayout): void {
    const arg = this.argOf(fields);
    if (arg === undefined) {
      this.addWhole({ id: actionId(fields), ...fields });
      return;
    }
    const reasserted = fields.kind === 'add-to-group' && fields.before === null;
    this.flags.push(KIND_INDEX.get(fields.kind)! | (layout === 'person-first' ? PERSON_FIRST : 0) | (reasserted ? BEFORE_UNKNOWN : 0));
    this.people.push(this.personRef(fields));
    this.args.push(arg);
    if (fields.repair !== undefined) this.repairs.set(this.count, fields.repair);
    this.count += 1;
  }

  /** The one number an action holds beyond its kind and person (see `args`), or undefined when it does not fit the form. */
  private argOf(fields: ActionFields): number | undefined {
    if (fields.kind === 'create-user') {
      if (fields.seq !== 0 || fields.before !== null || fields.groupId !== undefined) return undefined;
      return this.createRef(fields.after, fields);
    }
    const implied = IMPLIED[fields.kind];
    if (implied === undefined || fields.seq !== implied.seq || !sameState(fields.after, implied.after)) return undefined;
    const before = sameState(fields.before, implied.before) || (fields.kind === 'add-to-group' && fields.before === null);
    if (!before) return undefined;
    const grouped = fields.kind === 'add-to-group' || fields.kind === 'remove-from-group';
    if (grouped !== (fields.groupId !== undefined)) return undefined;
    return fields.groupId === undefined ? -1 : this.groupRef(fields.groupId);
  }

  private addWhole(action: PlannedAction): void {
    this.flags.push((KIND_INDEX.get(action.kind) ?? 0) | WHOLE);
    this.people.push(this.personRef(action));
    this.args.push(-1);
    this.whole.set(this.count, action);
    this.count += 1;
  }

  private personRef(a: Pick<PlannedAction, 'employeeId' | 'email' | 'platformUserId' | 'baseVersion'>): number {
    const last = this.employeeIds.length - 1;
    if (last >= 0 && this.employeeIds.at(last) === a.employeeId && this.emails.at(last) === a.email && (this.platformUserIds.at(last) ?? null) === a.platformUserId && this.versions.at(last) === a.baseVersion) return last;
    this.employeeIds.push(a.employeeId);
    this.emails.push(a.email);
    this.platformUserIds.push(a.platformUserId ?? undefined);
    this.versions.push(a.baseVersion);
    return last + 1;
  }

  private groupRef(groupId: string): number {
    let index = this.groupIndex.get(groupId);
    if (index === undefined) {
      index = this.groupIds.length;
      this.groupIds.push(groupId);
      this.groupIndex.set(groupId, index);
    }
    return index;
  }

  /** A new account's state, by column when it has the planner's five fields in its order. */
  private createRef(state: ActionState, person: Pick<PlannedAction, 'employeeId' | 'email'>): number | undefined {
    const keys = Object.keys(state);
    const role = state.role === undefined ? -1 : ROLE_STATES.indexOf(state.role);
    if (keys.length !== 5 || keys[0] !== 'email' || keys[1] !== 'firstName' || keys[2] !== 'lastName' || keys[3] !== 'role' || keys[4] !== 'organisationIdentifier' || role < 0) return undefined;
    const { email, firstName, lastName, organisationIdentifier } = state;
    if (typeof email !== 'string' || typeof firstName !== 'string' || typeof lastName !== 'string' || typeof organisationIdentifier !== 'string') return undefined;
    this.createRoles.push(role);
    this.createEmails.push(email === person.email ? undefined : email);
    this.createFirstNames.push(firstName);
    this.createLastNames.push(lastName);
    this.createOrgIds.push(organisationIdentifier === person.employeeId ? undefined : organisationIdentifier);
    return this.createFirstNames.length - 1;
  }

  private createState(k: number, person: number): ActionState {
    return {
      email: this.createEmails.at(k) ?? this.emails.at(person),
      firstName: this.createFirstNames.at(k),
      lastName: this.createLastNames.at(k),
      role: ROLE_STATES[this.createRoles.at(k)]!,
      organisationIdentifier: this.createOrgIds.at(k) ?? this.employeeIds.at(person),
    };
  }

  /** The kind of action `i`, without reading it whole. */
  kindAt(i: number): ActionKind {
    return ACTION_KINDS[this.flags.at(i) & KIND_MASK]!;
  }

  employeeIdAt(i: number): string {
    return this.employeeIds.at(this.people.at(i));
  }

  hasRepairAt(i: number): boolean {
    const whole = this.whole.get(i);
    return whole === undefined ? this.repairs.has(i) : whole.repair !== undefined;
  }

  /** Action `i` as the planner planned it (a new object each time). */
  at(i: number): PlannedAction | undefined {
    if (!Number.isInteger(i) || i < 0 || i >= this.count) return undefined;
    const flags = this.flags.at(i);
    if ((flags & WHOLE) !== 0) return this.whole.get(i)!;
    const kind = ACTION_KINDS[flags & KIND_MASK]!;
    const person = this.people.at(i);
    const employeeId = this.employeeIds.at(person);
    const email = this.emails.at(person);
    const platformUserId = this.platformUserIds.at(person) ?? null;
    const baseVersion = this.versions.at(person);
    const arg = this.args.at(i);
    const repair = this.repairs.get(i);
    let seq = 0;
    let before: ActionState | null = null;
    let after: ActionState;
    let groupId: string | undefined;
    if (kind === 'create-user') after = this.createState(arg, person);
    else {
      const implied = IMPLIED[kind];
      seq = implied.seq;
      before = (flags & BEFORE_UNKNOWN) === 0 ? implied.before : null;
      after = implied.after;
      if (arg >= 0) groupId = this.groupIds[arg]!;
    }
    const id = actionId({ kind, employeeId, email, ...(groupId === undefined ? {} : { groupId }), baseVersion });
    // The planner's field orders (see ActionLayout); optional fields only when set, as planned.
    if ((flags & PERSON_FIRST) !== 0) {
      const a: PlannedAction = groupId === undefined
        ? { id, employeeId, email, platformUserId, baseVersion, kind, seq, before, after }
        : { id, employeeId, email, platformUserId, baseVersion, kind, groupId, seq, before, after };
      if (repair !== undefined) a.repair = repair;
      return a;
    }
    const a: PlannedAction = groupId === undefined
      ? { id, kind, employeeId, email, platformUserId, seq, baseVersion, before, after }
      : { id, kind, employeeId, email, groupId, platformUserId, seq, baseVersion, before, after };
    if (repair !== undefined) a.repair = repair;
    return a;
  }

  *[Symbol.iterator](): IterableIterator<PlannedAction> {
    for (let i = 0; i < this.count; i += 1) yield this.at(i)!;
  }

  /** The actions of one kind, in plan order, read one at a time. */
  *ofKind(kind: ActionKind): IterableIterator<PlannedAction> {
    for (let i = 0; i < this.count; i += 1) if (this.kindAt(i) === kind) yield this.at(i)!;
  }

  map<T>(fn: (action: PlannedAction, index: number) => T): T[] {
    const out: T[] = new Array<T>(this.count);
    for (let i = 0; i < this.count; i += 1) out[i] = fn(this.at(i)!, i);
    return out;
  }

  filter(fn: (action: PlannedAction, index: number) => boolean): PlannedAction[] {
    const out: PlannedAction[] = [];
    for (let i = 0; i < this.count; i += 1) {
      const a = this.at(i)!;
      if (fn(a, i)) out.push(a);
    }
    return out;
  }

  find(fn: (action: PlannedAction, index: number) => boolean): PlannedAction | undefined {
    for (let i = 0; i < this.count; i += 1) {
      const a = this.at(i)!;
      if (fn(a, i)) return a;
    }
    return undefined;
  }

  some(fn: (action: PlannedAction, index: number) => boolean): boolean {
    return this.find(fn) !== undefined;
  }

  every(fn: (action: PlannedAction, index: number) => boolean): boolean {
    return !this.some((a, i) => !fn(a, i));
  }

  /** The actions as objects: for a plan of a few people (tests, a held plan's page). */
  toArray(): PlannedAction[] {
    return this.map((a) => a);
  }

  /** JSON shows the actions as an array, as it did when they were one. */
  toJSON(): PlannedAction[] {
    return this.toArray();
  }

  /** Written one action at a time (lib/json-stream.ts), the same text as toJSON's. */
  [JSON_ITEMS](): Iterable<PlannedAction> {
    return this;
  }

  /** The same plan without the actions of `employees` (those a guard held). */
  withoutEmployees(employees: ReadonlySet<string>): PlanActions {
    if (employees.size === 0) return this;
    const out = new PlanActions();
    for (let i = 0; i < this.count; i += 1) if (!employees.has(this.employeeIdAt(i))) out.addWhole(this.at(i)!);
    return out;
  }
}

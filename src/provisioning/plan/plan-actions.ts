import { actionId } from './action-id.ts';
import { JSON_ENTRIES, JSON_ITEMS, type JsonEntries, type JsonItems } from '../../lib/json-stream.ts';
import { ChunkedColumn, float64Column, int32Column, uint32Column, uint8Column } from '../../lib/typed-column.ts';
import type { FeedRole } from '../feed/types.ts';
import { ACTION_KINDS, type ActionKind, type ActionState, type PlannedAction } from './action.ts';

/**
 * A plan's actions, held by column: a first run of a 300,000-row feed plans some 875,000
 * actions, and as one object each (with its id, its states and a per-person index) they
 * took 210 MB; here they take about 35 (docs/benchmarks.md, "A large HR feed"). Each action
 * is a few numbers: its kind and order, who it is for (a person's id, e-mail, platform user
 * and version, shared by that person's actions), its group (interned) and its states (the
 * shared ones by number, a new account's from columns). The id is not stored: it is
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
/** Bits of `flags`: the kind's index (0–4), the layout, and an action kept whole. */
const KIND_MASK = 0b111;
const PERSON_FIRST = 0b1000;
const WHOLE = 0b10000;
/** `states` reference of a new account's state: its index in the create columns, marked by the sign. */
const NO_STATE = 0;
const ROLE_STATES: readonly FeedRole[] = ['USER', 'ADMIN'];

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
  private slots: Map<string, number> | undefined;
  private firsts = new Int32Array(0);
  private lasts = new Int32Array(0);
  private next = new Int32Array(0);

  constructor(private readonly actions: PlanActions) {}

  private index(): Map<string, number> {
    if (this.slots !== undefined) return this.slots;
    const slots = new Map<string, number>();
    const n = this.actions.length;
    const next = new Int32Array(n).fill(-1);
    const firsts: number[] = [];
    const lasts: number[] = [];
    for (let i = 0; i < n; i += 1) {
      const employeeId = this.actions.employeeIdAt(i);
      const slot = slots.get(employeeId);
      if (slot === undefined) {
        slots.set(employeeId, firsts.length);
        firsts.push(i);
        lasts.push(i);
      } else {
        next[lasts[slot]!] = i;
        lasts[slot] = i;
      }
    }
    this.firsts = Int32Array.from(firsts);
    this.lasts = Int32Array.from(lasts);
    this.next = next;
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
    for (let i = this.firsts[slot]!; i >= 0; i = this.next[i]!) out.push(i);
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
  private readonly seqs = uint8Column();
  private readonly people = uint32Column();
  private readonly groups = int32Column();
  private readonly befores = int32Column();
  private readonly afters = int32Column();
  /** Per person: consecutive actions with the same four fields share one. */
  private readonly employeeIds = new ChunkedColumn<string>();
  private readonly emails = new ChunkedColumn<string>();
  /** null (most: no account yet) as undefined, which takes no room. */
  private readonly platformUserIds = new ChunkedColumn<string | undefined>();
  private readonly versions = float64Column();
  /** Interned group ids. */
  private readonly groupIds: string[] = [];
  private readonly groupIndex = new Map<string, number>();
  /** States by number (0: none); the shared, frozen ones are interned by identity. */
  private readonly states: (ActionState | null)[] = [null];
  private readonly stateIndex = new Map<ActionState, number>();
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
    const i = this.count;
    const kind = KIND_INDEX.get(fields.kind);
    const before = this.stateRef(fields.before);
    const after = fields.kind === 'create-user' ? this.createRef(fields.after, fields) : this.stateRef(fields.after);
    if (kind === undefined || before === undefined || after === undefined || !Number.isInteger(fields.seq) || fields.seq < 0 || fields.seq > 255) {
      this.addWhole({ id: actionId(fields), ...fields });
      return;
    }
    this.flags.push(kind | (layout === 'person-first' ? PERSON_FIRST : 0));
    this.seqs.push(fields.seq);
    this.people.push(this.personRef(fields));
    this.groups.push(fields.groupId === undefined ? -1 : this.groupRef(fields.groupId));
    this.befores.push(before);
    this.afters.push(after);
    if (fields.repair !== undefined) this.repairs.set(i, fields.repair);
    this.count = i + 1;
  }

  private addWhole(action: PlannedAction): void {
    const i = this.count;
    this.flags.push((KIND_INDEX.get(action.kind) ?? 0) | WHOLE);
    this.seqs.push(0);
    this.people.push(this.personRef(action));
    this.groups.push(-1);
    this.befores.push(NO_STATE);
    this.afters.push(NO_STATE);
    this.whole.set(i, action);
    this.count = i + 1;
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

  /** A state by number: null is 0; a frozen (shared) state is interned; any other is kept whole (undefined). */
  private stateRef(state: ActionState | null): number | undefined {
    if (state === null) return NO_STATE;
    const known = this.stateIndex.get(state);
    if (known !== undefined) return known;
    if (!Object.isFrozen(state)) return undefined;
    this.states.push(state);
    this.stateIndex.set(state, this.states.length - 1);
    return this.states.length - 1;
  }

  /** A new account's state, by column when it has the planner's five fields in its order. */
  private createRef(state: ActionState, person: Pick<PlannedAction, 'employeeId' | 'email'>): number | undefined {
    const keys = Object.keys(state);
    const role = state.role === undefined ? -1 : ROLE_STATES.indexOf(state.role);
    if (keys.length !== 5 || keys[0] !== 'email' || keys[1] !== 'firstName' || keys[2] !== 'lastName' || keys[3] !== 'role' || keys[4] !== 'organisationIdentifier' || role < 0) return this.stateRef(state);
    const { email, firstName, lastName, organisationIdentifier } = state;
    if (typeof email !== 'string' || typeof firstName !== 'string' || typeof lastName !== 'string' || typeof organisationIdentifier !== 'string') return undefined;
    this.createRoles.push(role);
    this.createEmails.push(email === person.email ? undefined : email);
    this.createFirstNames.push(firstName);
    this.createLastNames.push(lastName);
    this.createOrgIds.push(organisationIdentifier === person.employeeId ? undefined : organisationIdentifier);
    return -this.createEmails.length;
  }

  private state(ref: number, person: number): ActionState | null {
    if (ref >= 0) return this.states[ref]!;
    const k = -ref - 1;
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
    const group = this.groups.at(i);
    const groupId = group < 0 ? undefined : this.groupIds[group]!;
    const seq = this.seqs.at(i);
    const before = this.state(this.befores.at(i), person);
    const after = this.state(this.afters.at(i), person)!;
    const repair = this.repairs.get(i);
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

  /** How many actions of `kind` (without reading them). */
  countOf(kind: ActionKind): number {
    let n = 0;
    for (let i = 0; i < this.count; i += 1) if (this.kindAt(i) === kind) n += 1;
    return n;
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

import { APP_ROLE } from './connection-settings.ts';
import { Kysely, PostgresDialect, type PostgresPool, type PostgresPoolClient } from 'kysely';
import pg from 'pg';
import type { Logger } from 'pino';
import type { Database } from './database.ts';
import { lendFrom, withRetriedTransaction, withTransaction, type PgLender, type Tx } from './transaction.ts';

/**
 * How trainsync reaches organisation data. Its connections run as role trainsync_app
 * (src/warehouse/pool.ts), which row-level security binds (sql/views/95_trainsync_app.sql):
 * a statement sees and writes only the rows of the organisations its transaction named
 * with `set_config('trainsync.org', …, true)`. A handle from `scope(org)` runs every unit
 * of work in such a transaction, so a query that forgets `where org = …` still sees its
 * organisation only, and an insert naming another organisation is refused by Postgres.
 * Work across organisations goes through the one named escape, `acrossOrganisations`,
 * which logs its reason. The setting is transaction-local: it never outlives the unit of
 * work, so a pooled connection (or PgBouncer in transaction mode) carries no scope over.
 */

/** The brand's key: a type only, nothing at run time. */
declare const ISSUED: unique symbol;

/**
 * Handed out by `createScopes` only: a hand-built `{ org, db }`, which could pair one
 * organisation's slug with another's handle (or with the owner's), has no brand and is
 * refused by every store's parameter types.
 */
interface Issued {
  readonly [ISSUED]: true;
}

/**
 * The organisation a handle is for, as what takes only its name (a lock, a job id, a Redis key
 * of the organisation) sees it: every handle below is one, so the name comes with the handle
 * the work was given, never from a string passed beside it.
 */
export interface OrgRef extends Issued {
  /** The organisation (its slug): the one Postgres shows this handle, and the one its rows name. */
  readonly org: string;
}

/**
 * One organisation's Kysely handle, and the organisation it is for: what a store's statement
 * takes. The store names `org` in its rows and filters; Postgres shows `db` that organisation's
 * rows only. The two come together from `scope(org)` (or its transaction), so they cannot disagree.
 */
export interface OrgDb extends OrgRef {
  /** Kysely whose every statement runs in a transaction scoped to `org` (its own, or the one it is in). */
  readonly db: Kysely<Database>;
}

/** One open transaction of one organisation: the raw client (COPY) and Kysely on it, and the organisation. */
export interface OrgTx extends OrgDb {
  readonly client: pg.PoolClient;
}

/** The handle of one organisation (`scope(org)`): what a job, a command or a request of that organisation works with. */
export interface OrgScope extends OrgDb {
  /** The one organisation, as a list (so a handle of one serves where one of several is taken). */
  readonly orgs: readonly [string];
  /** Lends a scoped client: a statement outside BEGIN runs in a scoped transaction of its own; BEGIN sets the scope. */
  readonly lend: PgLender;
  /** One scoped transaction: the raw client (COPY), Kysely on it and the organisation. */
  transaction<T>(fn: (tx: OrgTx) => Promise<T>): Promise<T>;
  /** `transaction`, run again when Postgres aborts it for a deadlock or a serialization failure (see `withRetriedTransaction`). */
  retriedTransaction<T>(fn: (tx: OrgTx) => Promise<T>): Promise<T>;
}

/**
 * A handle over several organisations (a console view of several, `status` of a few) or over
 * all of them (`acrossOrganisations`): it names no one organisation, so no store of one takes it;
 * the queries over several name theirs in `orgs`.
 */
export interface OrgsScope {
  /** The organisations this handle sees: several slugs, or all. */
  readonly orgs: readonly string[] | 'all';
  /** Kysely whose every statement runs in a scoped transaction (its own, or the `transaction()` it is in). */
  readonly db: Kysely<Database>;
  /** Lends a scoped client, as OrgScope's. */
  readonly lend: PgLender;
  /** One scoped transaction: the raw client (COPY) and Kysely on it. */
  transaction<T>(fn: (tx: Tx) => Promise<T>): Promise<T>;
}

export interface OrgScopes {
  /** The handle of one organisation (each call for the same organisation returns the same handle). */
  scope(org: string): OrgScope;
  /** The handle of several organisations (each call for the same set returns the same handle). */
  scope(orgs: readonly string[]): OrgsScope;
  scope(orgs: string | readonly string[]): OrgScope | OrgsScope;
  /**
   * The named escape for work over every organisation (a sweep, `status --org all`,
   * a GUID checked against the others'): `reason` is logged, then `fn` runs with a handle
   * that sees every organisation (trainsync.all_orgs).
   */
  acrossOrganisations<T>(reason: string, fn: (all: OrgsScope) => Promise<T>): Promise<T>;
  /**
   * Kysely without any scope: it sees no organisation's rows (row-level security), only
   * the tables that carry none (the console's sessions, the migrations' bookkeeping).
   */
  readonly unscoped: Kysely<Database>;
}

// The role again, for this transaction only: behind a transaction-mode pooler (PgBouncer) the
// SET ROLE of a connection's opening reached one server connection, not this one.
const BEGIN_RE = /^\s*(begin|start\s+transaction)\b/i;
const END_RE = /^\s*(commit|rollback|end|abort)\s*;?\s*$/i;

type Query = pg.PoolClient['query'];
type RawQuery = (...args: unknown[]) => Promise<unknown>;

/** The text of a query call's first argument, or undefined for a submittable (COPY streams, cursors). */
function textOf(first: unknown): string | undefined {
  if (typeof first === 'string') return first;
  if (typeof first === 'object' && first !== null && 'text' in first && !('submit' in first)) {
    const text = (first as { text: unknown }).text;
    return typeof text === 'string' ? text : undefined;
  }
  return undefined;
}

/**
 * The scope as one statement of constants: the role, the organisations and all_orgs of one
 * handle, each quoted by pg's `escapeLiteral` (made once per handle, never from a statement's
 * values). Being text without parameters, it goes in the same simple query as the BEGIN.
 */
function scopeStatement(org: string, allOrgs: string): string {
  const literal = (value: string): string => pg.escapeLiteral(value);
  return `select set_config('role', ${literal(APP_ROLE)}, true), set_config('trainsync.org', ${literal(org)}, true), set_config('trainsync.all_orgs', ${literal(allOrgs)}, true)`;
}

/** A BEGIN the caller sent, without its closing semicolon (the scope follows it in the same query). */
function withoutEnd(text: string): string {
  return text.replace(/[\s;]+$/, '');
}

/**
 * A pool client whose statements run scoped, through pg's public API only (no private field
 * of its client is read or written: a minor release of pg may change them). BEGIN is sent with
 * the scope's set_config in one simple query (Postgres keeps the transaction a BEGIN opens in a
 * multi-statement query open after it; one round trip). A statement outside a transaction runs
 * in a scoped transaction of its own: that BEGIN and scope, the statement, COMMIT (three round
 * trips; docs/benchmarks.md, "Row security: the scope through pg's public API", measures them).
 * A statement never runs unscoped: should the BEGIN or the set_config fail, the transaction is
 * rolled back and the statement is not sent. Those transactions of their own run one at a time
 * on the client, so two sent together never share, or run outside, one. COPY streams and
 * cursors pass through: they run inside the caller's transaction (the loaders'
 * withTransaction), or unscoped, where row-level security shows them nothing.
 */
function scopedClient(client: pg.PoolClient, setScope: string): pg.PoolClient {
  let inTransaction = false;
  let own: Promise<unknown> = Promise.resolve();
  const raw = client.query.bind(client) as RawQuery;
  /** A BEGIN and the scope, sent by `send`; on failure nothing stays open. Resolves to BEGIN's result. */
  const opened = async (send: () => Promise<unknown>): Promise<unknown> => {
    try {
      return await send();
    } catch (error) {
      await raw('rollback').catch(() => undefined);
      throw error;
    }
  };
  // One simple query, which takes no parameters: the BEGIN (the caller's text) and the handle's constants (scopeStatement).
  const begin = (text: string): Promise<unknown> => opened(async () => ((await client.query(`${withoutEnd(text)}; ${setScope}`)) as unknown as unknown[])[0]);
  /** `fn` after the transactions of their own sent before it (whatever their outcome). */
  const inTurn = <T>(fn: () => Promise<T>): Promise<T> => {
    const turn = own.then(fn);
    own = turn.catch(() => undefined);
    return turn;
  };
  const query = (...args: unknown[]): unknown => {
    const text = textOf(args[0]);
    if (text === undefined || typeof args[args.length - 1] === 'function') return raw(...args);
    if (BEGIN_RE.test(text)) {
      // A BEGIN with values or options of its own (none of ours) keeps them: the scope follows it.
      const plain = typeof args[0] === 'string' && (args.length === 1 || (Array.isArray(args[1]) && args[1].length === 0));
      return inTurn(async () => {
        const began = plain
          ? await begin(text)
          : await opened(async () => {
              const result = await raw(...args);
              await raw(setScope);
              return result;
            });
        // The caller's transaction from here to its COMMIT or ROLLBACK: its statements go as they are.
        inTransaction = true;
        return began;
      });
    }
    if (END_RE.test(text)) {
      inTransaction = false;
      return raw(...args);
    }
    if (inTransaction) return raw(...args);
    return inTurn(async () => {
      await begin('begin');
      try {
        const result = await raw(...args);
        await raw('commit');
        return result;
      } catch (error) {
        // A failed statement aborted the transaction; a COMMIT that fails (a deferred check) ended it.
        await raw('rollback').catch(() => undefined);
        throw error;
      }
    });
  };
  return new Proxy(client, {
    get(target, key, receiver) {
      if (key === 'query') return query as Query;
      const value: unknown = Reflect.get(target, key, receiver);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/** The handles of one organisation, or of several, over one lender and its Kysely. */
function handlesOf(db: Kysely<Database>, lend: PgLender): { one(org: string): OrgScope; several(orgs: readonly string[] | 'all'): OrgsScope } {
  return {
    one: (org) => {
      const transaction = <T>(fn: (tx: OrgTx) => Promise<T>): Promise<T> => withTransaction(lend, (tx) => fn(orgTx(org, tx)));
      const retriedTransaction = <T>(fn: (tx: OrgTx) => Promise<T>): Promise<T> => withRetriedTransaction(lend, (tx) => fn(orgTx(org, tx)));
      return { org, orgs: [org], db, lend, transaction, retriedTransaction } as Omit<OrgScope, typeof ISSUED> as OrgScope;
    },
    several: (orgs) => ({ orgs, db, lend, transaction: (fn) => withTransaction(lend, fn) }),
  };
}

/** A transaction of `org`'s handle, with its organisation (the one place an OrgTx is made). */
function orgTx(org: string, tx: Tx): OrgTx {
  return { org, client: tx.client, db: tx.db } as Omit<OrgTx, typeof ISSUED> as OrgTx;
}

/** A lender and Kysely over `pool` whose connections carry one scope (`org`: comma-joined slugs, or '' with all_orgs 'on'). */
function scopedOver(pool: pg.Pool, orgs: readonly string[] | 'all'): { db: Kysely<Database>; lend: PgLender } {
  const setScope = scopeStatement(orgs === 'all' ? '' : orgs.join(','), orgs === 'all' ? 'on' : 'off');
  const plain = lendFrom(pool);
  const lend: PgLender = (fn) => plain((client) => fn(scopedClient(client, setScope)));
  const scopedPool: PostgresPool = {
    connect: async () => {
      const client = await pool.connect();
      return scopedClient(client, setScope) as unknown as PostgresPoolClient;
    },
    end: async () => undefined,
  };
  return { db: new Kysely<Database>({ dialect: new PostgresDialect({ pool: scopedPool }) }), lend };
}

export interface ScopesOptions {
  /**
   * false: handles that set no scope, over a pool of the owner (which row-level security
   * does not bind): the path as it was before trainsync bound itself, for the benchmark
   * that measures what row security costs (`npm run bench -- sync`). Never in production.
   */
  rowSecurity?: boolean;
}

/** The scopes over trainsync's pool (its connections run as trainsync_app). */
export function createScopes(pool: pg.Pool, log: Logger, options: ScopesOptions = {}): OrgScopes {
  if (options.rowSecurity === false) return unboundScopes(pool);
  const ones = new Map<string, OrgScope>();
  const severals = new Map<string, OrgsScope>();
  const allParts = scopedOver(pool, 'all');
  const all = handlesOf(allParts.db, allParts.lend).several('all');
  const reasons = new Set<string>();
  const one = (org: string): OrgScope => {
    let scope = ones.get(org);
    if (!scope) {
      const parts = scopedOver(pool, [org]);
      scope = handlesOf(parts.db, parts.lend).one(org);
      ones.set(org, scope);
    }
    return scope;
  };
  const several = (orgs: readonly string[]): OrgsScope => {
    const key = orgs.join(',');
    let scope = severals.get(key);
    if (!scope) {
      const parts = scopedOver(pool, [...orgs]);
      scope = handlesOf(parts.db, parts.lend).several([...orgs]);
      severals.set(key, scope);
    }
    return scope;
  };
  return {
    scope: ((org: string | readonly string[]) => (typeof org === 'string' ? one(org) : several(org))) as OrgScopes['scope'],
    async acrossOrganisations(reason, fn) {
      // Each reason at info once per process (what crosses organisations, for the audit),
      // then at debug: sweeps cross every few seconds.
      const first = !reasons.has(reason);
      reasons.add(reason);
      log[first ? 'info' : 'debug']({ reason }, 'work across organisations');
      return fn(all);
    },
    unscoped: new Kysely<Database>({ dialect: new PostgresDialect({ pool }) }),
  };
}

/**
 * `rowSecurity: false`: every handle is the plain pool (see ScopesOptions). Also the tests'
 * way to the owner's rows of one organisation (test/helpers/db.ts): the owner's pool, which
 * row-level security does not bind, with the organisation the stores name.
 */
function unboundScopes(pool: pg.Pool): OrgScopes {
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  const handles = handlesOf(db, lendFrom(pool));
  return {
    scope: ((org: string | readonly string[]) => (typeof org === 'string' ? handles.one(org) : handles.several([...org]))) as OrgScopes['scope'],
    acrossOrganisations: (_reason, fn) => fn(handles.several('all')),
    unscoped: db,
  };
}

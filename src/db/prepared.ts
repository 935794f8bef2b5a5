import { createHash } from 'node:crypto';
import { type Compilable, type CompiledQuery, createQueryId, type Kysely } from 'kysely';

/**
 * A query built with Kysely once per database handle and then run with new parameter values,
 * so a hot path skips building and compiling the query on every call (on both engines: the SQL
 * is compiled by the handle's own dialect). Only values change between calls, never the SQL, and
 * results go through the handle's plugins exactly as a built query's do.
 *
 * The builder receives stand-ins for the named parameters; each must be used as a value
 * (`.where('id', '=', params.id)`), never inlined with `sql.lit` or as an identifier.
 */
export type PreparedQuery<DB, P extends Record<string, unknown>, R> = {
  execute(db: Kysely<DB>, params: P): Promise<R[]>;
  executeTakeFirst(db: Kysely<DB>, params: P): Promise<R | undefined>;
};

/**
 * The SQL of every prepared query, by the name PostgreSQL knows it under: each connection parses
 * and plans it once as a named statement (see openDatabase) instead of on every call. Bounded by
 * the prepared queries in the code, one text per query and dialect.
 */
export const namedStatements = new Map<string, string>();

type Template = { compiled: CompiledQuery; slots: ({ name: string } | { value: unknown })[] };

const MARK = '\u0000till:param:';

export function prepareQuery<DB, P extends Record<string, unknown>, R>(build: (db: Kysely<DB>, params: P) => Compilable<R>): PreparedQuery<DB, P, R> {
  const templates = new WeakMap<Kysely<DB>, Template>();

  const templateFor = (db: Kysely<DB>): Template => {
    let template = templates.get(db);
    if (template) return template;
    const standIns = new Proxy({} as P, { get: (_target, name) => `${MARK}${String(name)}` });
    const compiled = build(db, standIns).compile();
    if (compiled.sql.includes(MARK)) throw new Error('prepareQuery: a parameter was inlined into the SQL instead of bound as a value');
    namedStatements.set(compiled.sql, `till_${createHash('sha256').update(compiled.sql).digest('hex').slice(0, 24)}`);
    const slots = compiled.parameters.map((value) => (typeof value === 'string' && value.startsWith(MARK) ? { name: value.slice(MARK.length) } : { value }));
    template = { compiled, slots };
    templates.set(db, template);
    return template;
  };

  const execute = async (db: Kysely<DB>, params: P): Promise<R[]> => {
    const { compiled, slots } = templateFor(db);
    const parameters = slots.map((slot) => {
      if (!('name' in slot)) return slot.value;
      if (!(slot.name in params)) throw new Error(`prepareQuery: parameter ${slot.name} is missing`);
      return params[slot.name];
    });
    const result = await db.executeQuery<R>({ sql: compiled.sql, query: compiled.query, parameters, queryId: createQueryId() });
    return result.rows;
  };

  return {
    execute,
    async executeTakeFirst(db, params) {
      const rows = await execute(db, params);
      return rows[0];
    },
  };
}

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { pino } from 'pino';
import { newId } from '../common/ids.ts';
import { loadConfig } from '../config.ts';
import { writtenTables } from '../db/changes.ts';
import { type DatabaseHandle, openDatabase } from '../db/index.ts';
import { migrateToLatest } from '../db/migrate.ts';
import { setMerchantWallet } from '../merchants/merchants.ts';
import { archiveSession, insertSession } from '../sessions/sessions.ts';
import { createTestDatabase } from '../testing/environment.ts';
import { createMerchant } from '../testing/shop.ts';
import { type ChallengeCache, createChallengeCache, type EncodedChallenge, MAX_AMOUNTS_PER_SESSION, MAX_ANSWERS } from './challenge-cache.ts';

let storage: Awaited<ReturnType<typeof createTestDatabase>>;
let database: DatabaseHandle;
let cache: ChallengeCache;

before(async () => {
  storage = await createTestDatabase('sqlite');
  const config = loadConfig({ TILL_DATABASE_URL: storage.url, TILL_DATA_DIR: '/tmp', TILL_SECRET_KEY: '00'.repeat(32) });
  database = openDatabase(config);
  await migrateToLatest(database.db);
  cache = createChallengeCache({ db: database.db, log: pino({ level: 'silent' }) });
});
after(async () => {
  await cache.close();
  await database.close();
  await storage.drop();
});

const answer = (text: string): EncodedChallenge => ({ status: 402, headers: {}, withCors: {}, body: Buffer.from(text) });
const put = (sessionId: string, amount = '', until = Number.MAX_SAFE_INTEGER, merchantId = 'm_1') =>
  cache.put(cache.ticket(), { sessionId, amount, merchantId }, answer(`${sessionId}/${amount}`), until);

test('an answer is served until its end, then no more', () => {
  put('ps_until', '', 1_000);
  assert.equal(cache.get('ps_until', '', 999)?.body.toString(), 'ps_until/');
  assert.equal(cache.get('ps_until', '', 1_000), undefined);
  assert.equal(cache.get('ps_until', '', 0), undefined, 'an ended answer is gone');
});

/** A merchant and two sessions of it, written as the owners would. */
async function rows() {
  const { merchantId } = await createMerchant(database.db);
  const now = Date.now();
  const session = (id: string) => ({
    id,
    merchant_id: merchantId,
    order_id: null,
    order_type: 'STATIC' as const,
    status: 'OPEN' as const,
    amount_minor: 100n,
    currency: 'USD',
    min_amount_minor: null,
    editable: 0,
    concept: null,
    success_url: null,
    cancel_url: null,
    fail_url: null,
    pay_to: null,
    expires_at: null,
    created_at: now,
    updated_at: now,
    version: 1,
    mode: 'sandbox' as const,
  });
  const ids = [newId('ps_'), newId('ps_')] as const;
  for (const id of ids) await insertSession(database.db, session(id));
  return { merchantId, ids };
}

test('a fill read before a committed change is not kept', async () => {
  const { merchantId } = await rows();
  const ticket = cache.ticket();
  assert.ok(await setMerchantWallet(database.db, merchantId, 'sandbox', `0x${'1'.repeat(40)}`));
  cache.put(ticket, { sessionId: 'ps_late', amount: '', merchantId }, answer('stale'), Number.MAX_SAFE_INTEGER);
  assert.equal(cache.get('ps_late', '', 0), undefined);
});

test('a write that changes no row drops nothing; a session change drops every amount of that session only', async () => {
  const { merchantId, ids } = await rows();
  put(ids[0], '1', undefined, merchantId);
  put(ids[0], '2', undefined, merchantId);
  put(ids[1], '', undefined, merchantId);
  await database.db.updateTable('payment_sessions').set({ concept: 'x' }).where('id', '=', 'ps_none').returning('id').execute();
  assert.ok(cache.get(ids[0], '1', 0));
  assert.ok(await archiveSession(database.db, 'sandbox', merchantId, ids[0], Date.now()));
  assert.equal(cache.get(ids[0], '1', 0), undefined);
  assert.equal(cache.get(ids[0], '2', 0), undefined);
  assert.ok(cache.get(ids[1], '', 0));
});

test('the written table is read from the query node: a statement that only mentions payment_sessions drops nothing, an aliased update of it drops', async () => {
  const { merchantId, ids } = await rows();
  put(ids[0], '', undefined, merchantId);
  put(ids[1], '', undefined, merchantId);
  const ofSession = database.db.selectFrom('payment_sessions').select('id').where('id', '=', ids[0]);
  await database.db.updateTable('payment_quotes').set({ expires_at: 0 }).where('session_id', 'in', ofSession).execute();
  await database.db.deleteFrom('payment_quotes').where('session_id', 'in', ofSession).execute();
  assert.ok(cache.get(ids[0], '', 0), 'an update and a delete of another table, with payment_sessions in a subquery, kept the answer');
  const aliased = await database.db.updateTable('payment_sessions as s').set({ concept: 'aliased' }).where('s.id', '=', ids[0]).returning('id').execute();
  assert.equal(aliased.length, 1);
  assert.equal(cache.get(ids[0], '', 0), undefined, 'an update of payment_sessions through an alias dropped its answer');
  assert.ok(cache.get(ids[1], '', 0), "… and only that session's");
});

test('written tables: targets, not mentions; CTEs, upserts and raw SQL', () => {
  const { db } = database;
  const tables = (query: { compile(): Parameters<typeof writtenTables>[0] }) => writtenTables(query.compile());
  const ofSessions = db.selectFrom('payment_sessions').select('merchant_id');
  assert.deepEqual(tables(db.updateTable('merchants').set({ name: 'x' }).where('id', 'in', ofSessions)), { tables: ['merchants'], rowsAreIds: true });
  assert.deepEqual(tables(db.deleteFrom('payment_quotes as q').where('q.session_id', 'in', db.selectFrom('payment_sessions').select('id'))), {
    tables: [],
    rowsAreIds: true,
  });
  assert.deepEqual(tables(db.withSchema('public').deleteFrom('payment_sessions')), { tables: ['payment_sessions'], rowsAreIds: true });
  assert.deepEqual(tables(db.insertInto('payment_sessions').values({ id: 'ps_x' } as never)), { tables: [], rowsAreIds: true });
  assert.deepEqual(
    tables(
      db
        .insertInto('merchants')
        .values({ id: 'm_x' } as never)
        .onConflict((oc) => oc.column('id').doUpdateSet({ name: 'x' })),
    ),
    { tables: ['merchants'], rowsAreIds: true },
  );
  assert.deepEqual(
    tables(
      db
        .with('gone', (qb) => qb.deleteFrom('payment_sessions').where('id', '=', 'ps_x').returning('merchant_id'))
        .selectFrom('gone')
        .select('merchant_id as id'),
    ),
    { tables: ['payment_sessions'], rowsAreIds: false },
  );
  const raw = (text: string) => writtenTables(sql.raw(text).compile(db)).tables;
  assert.deepEqual(raw('UPDATE ONLY "public"."payment_sessions" SET concept = 1'), ['payment_sessions']);
  assert.deepEqual(raw('update payment_quotes set x = (select 1 from payment_sessions)'), []);
  assert.deepEqual(raw('INSERT INTO payment_sessions (id) VALUES (1)'), []);
  assert.deepEqual(raw('delete from merchants where id = 1'), ['merchants']);
});

test(`at most ${MAX_AMOUNTS_PER_SESSION} amounts a session and ${MAX_ANSWERS} answers in all, the oldest dropped first`, () => {
  for (let i = 0; i <= MAX_AMOUNTS_PER_SESSION; i++) put('ps_many', String(i));
  assert.equal(cache.get('ps_many', '0', 0), undefined);
  assert.ok(cache.get('ps_many', String(MAX_AMOUNTS_PER_SESSION), 0));
  for (let i = 0; i < MAX_ANSWERS; i++) put(`ps_fill_${i}`);
  assert.equal(cache.get('ps_many', '1', 0), undefined, 'the oldest session made room');
  assert.ok(cache.get(`ps_fill_${MAX_ANSWERS - 1}`, '', 0));
  assert.ok(cache.get('ps_fill_0', '', 0));
});

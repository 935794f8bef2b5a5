import { type Kysely, sql } from 'kysely';

/**
 * Every credential carries its mode: client credentials (`oauth_clients`), coding agents' grants
 * (`oauth_grants`, and through them their codes, refresh tokens and access tokens) and the audit of
 * their MCP calls (`mcp_tool_calls`). A credential acts on its own mode's data only.
 *
 * Rows made before are given a mode from the only record of the deployment's mode at the time: the
 * merchant's API keys, whose prefix is the mode they were made in. A client or grant is `live` when
 * the newest API key its merchant had made by then (revoked or not) is a live key, and `sandbox`
 * otherwise (docs/decisions.md, "Credentials made before modes"). So a credential made in the
 * sandbox never acts on live data; a live one made before any live key must be made again.
 */
export async function up(db: Kysely<any>): Promise<void> {
  // One column per statement: SQLite adds no more. The default fills the rows already there.
  for (const table of ['oauth_clients', 'oauth_grants', 'mcp_tool_calls'])
    await db.schema
      .alterTable(table)
      .addColumn('mode', 'text', (c) => c.notNull().defaultTo('sandbox'))
      .execute();
  for (const table of ['oauth_clients', 'oauth_grants'])
    await sql`UPDATE ${sql.table(table)} SET mode = 'live' WHERE (
      SELECT k.mode FROM api_keys k
      WHERE k.merchant_id = ${sql.table(table)}.merchant_id AND k.created_at <= ${sql.table(table)}.created_at
      ORDER BY k.created_at DESC, k.id DESC LIMIT 1
    ) = 'live'`.execute(db);
  await sql`UPDATE mcp_tool_calls SET mode = 'live' WHERE grant_id IN (SELECT id FROM oauth_grants WHERE mode = 'live')`.execute(db);
  // A merchant may give one agent test data and live data: one active grant per merchant, client and mode.
  await db.schema.dropIndex('oauth_grants_active').execute();
  await db.schema
    .createIndex('oauth_grants_active')
    .on('oauth_grants')
    .columns(['merchant_id', 'client_id', 'mode'])
    .unique()
    .where(sql.ref('revoked_at'), 'is', null)
    .execute();
}

/** Down again: refused by the unique index when a merchant has given one agent both modes. */
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('oauth_grants_active').execute();
  await db.schema
    .createIndex('oauth_grants_active')
    .on('oauth_grants')
    .columns(['merchant_id', 'client_id'])
    .unique()
    .where(sql.ref('revoked_at'), 'is', null)
    .execute();
  for (const table of ['mcp_tool_calls', 'oauth_grants', 'oauth_clients']) await db.schema.alterTable(table).dropColumn('mode').execute();
}

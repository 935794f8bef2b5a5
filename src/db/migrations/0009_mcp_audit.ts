import type { Kysely } from 'kysely';

/**
 * Every MCP tool call, refused ones included: who (grant, client, merchant), which tool, what came
 * of it, and a SHA-256 digest of the arguments (never the arguments). It is also what the per-grant
 * limits count, so they hold across instances.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('mcp_tool_calls')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('grant_id', 'text', (c) => c.notNull())
    .addColumn('client_id', 'text', (c) => c.notNull())
    .addColumn('merchant_id', 'text', (c) => c.notNull())
    .addColumn('tool', 'text', (c) => c.notNull())
    .addColumn('outcome', 'text', (c) => c.notNull())
    .addColumn('reason', 'text')
    .addColumn('arguments_sha256', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('mcp_tool_calls_grant').on('mcp_tool_calls').columns(['grant_id', 'created_at']).execute();
  await db.schema.createIndex('mcp_tool_calls_merchant').on('mcp_tool_calls').columns(['merchant_id', 'created_at']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('mcp_tool_calls').execute();
}

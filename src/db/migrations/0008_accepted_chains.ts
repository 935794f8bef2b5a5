import type { Kysely } from 'kysely';

/** What each merchant accepts: chains and the tokens on each, as JSON; every merchant starts with USDC on Base. */
export const DEFAULT_ACCEPTED_CHAINS = '[{"chain":"base","tokens":["USDC"]}]';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('merchants')
    .addColumn('accepted_chains', 'text', (c) => c.notNull().defaultTo(DEFAULT_ACCEPTED_CHAINS))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('merchants').dropColumn('accepted_chains').execute();
}

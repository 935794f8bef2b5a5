/** The sandbox demo merchant's user; `till users reset-password --email demo@till.localhost` if its password is lost. */
export const DEMO_USER_EMAIL = 'demo@till.localhost';

// The demo payout key is read by the dashboard too (its refund form's sandbox wallet): it lives with the merchants.
export { demoPayoutKey, SANDBOX_PAYOUT_KEY_FILE } from '../merchants/demo-payout-key.ts';

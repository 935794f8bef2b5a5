/** The sandbox demo merchant's user; `till users reset-password --email demo@till.localhost` if its password is lost. */
export const DEMO_USER_EMAIL = 'demo@till.localhost';

// Preloaded into every test process by scripts/test.ts (`--import`): with
// TILL_TEST_PASSWORD_HASH_COST=minimal (`npm run test:quick` sets it) users' passwords are hashed at
// Argon2's minimum cost, so tests that create users do not spend seconds hashing. Unset, nothing changes.
import { lowerPasswordHashCostForTests } from '../accounts/users.ts';

if (process.env.TILL_TEST_PASSWORD_HASH_COST === 'minimal') lowerPasswordHashCostForTests();

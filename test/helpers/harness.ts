// Moved to src/testing/harness.ts; this re-export remains only until the last importers
// (src/webhooks/*.test.ts, src/http/*.test.ts) import it from there. Delete it then.
export * from '../../src/testing/harness.ts';

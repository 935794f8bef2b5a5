/**
 * Test and live side by side. Every row and every credential belongs to one mode: `sandbox` (test
 * mode: fake money on the sandbox chain, `sk_test_` keys) or `live` (Base, `sk_live_` keys). The
 * credential of a request decides its mode; nothing of one mode is visible or payable in the other.
 */
export type Mode = 'sandbox' | 'live';

/** A mode as API keys name it in their prefix (`sk_test_…`, `sk_live_…`). */
export type KeyMode = 'test' | 'live';

export const MODES: readonly Mode[] = ['sandbox', 'live'];

export const keyModeOf = (mode: Mode): KeyMode => (mode === 'sandbox' ? 'test' : 'live');
export const modeOfKey = (keyMode: KeyMode): Mode => (keyMode === 'test' ? 'sandbox' : 'live');

/** How pages and messages name a mode. */
export const modeLabel = (mode: Mode): string => (mode === 'sandbox' ? 'test' : 'live');

/**
 * A wake-up call inside one app: what commits work for a background loop notifies, the loops of
 * the same app listen. Notifications are coalesced and run after the current work (setImmediate),
 * so waking never delays the answer of the request that caused it.
 */
export type WakeSignal = { notify(): void; subscribe(listener: () => void): () => void };

export function createWakeSignal(): WakeSignal {
  const listeners = new Set<() => void>();
  let scheduled = false;
  return {
    notify() {
      if (scheduled) return;
      scheduled = true;
      setImmediate(() => {
        scheduled = false;
        for (const listener of listeners) listener();
      });
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}

import type { AppContext } from '../context.ts';
import { confirmSettled, followUpPayments, type PaymentsPassOptions } from './payments.ts';
import { followUpRefunds } from './refunds.ts';

/** One mode's rails main.ts built, and the pass's timing. */
export type ReconcilerOptions = PaymentsPassOptions;

/**
 * The reconciler of one mode (each served mode with a chain has its own, on its own rails): every
 * interval, one pass over what the chain must decide — payments left
 * undecided (payments.ts), settled payments until final, and refunds (refunds.ts) — on whichever
 * instance runs the background roles; each claims its rows through the database.
 */
export function startReconciler(context: AppContext, options: ReconcilerOptions): { stop(): Promise<void>; runOnce(): Promise<void> } {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;
  const runOnce = async () => {
    await followUpPayments(context, options);
    await confirmSettled(context, options);
    await followUpRefunds(context, options);
  };
  const tick = () => {
    running = runOnce()
      .catch((error: unknown) => context.log.warn({ err: error }, 'reconciler pass failed'))
      .finally(() => {
        running = undefined;
        if (!stopped) timer = setTimeout(tick, options.intervalMs);
      });
  };
  timer = setTimeout(tick, options.intervalMs);
  return {
    runOnce,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}

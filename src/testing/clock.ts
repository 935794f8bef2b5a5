/**
 * Limits counted per minute use fixed windows of the wall clock: a test that makes its requests across
 * a minute's end sees two counts. Tests on the real clock start with at least `needMs` left in the minute.
 */
export async function clearOfMinuteEnd(needMs = 5_000): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000);
  // On the clock: the windows are the wall clock's minutes, so only the next minute's start ends this one.
  if (left < needMs) await new Promise((resolve) => setTimeout(resolve, left + 50));
}

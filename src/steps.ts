// Long synchronous computations written as generators that yield between steps (per device, per
// metric family): run straight through where nothing else waits (report, tests), or with a turn of
// the event loop between steps in the exporter, so a scrape arriving meanwhile is answered at once.

/** Runs the steps to the end without pausing. */
export function runSteps<T>(steps: Generator<void, T>): T {
  for (let r = steps.next(); ; r = steps.next()) if (r.done) return r.value;
}

/** Resolves after pending I/O callbacks (an incoming scrape) have had their turn. */
export const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Runs the steps, letting pending I/O and timers run between any two of them. */
export async function runStepsYielding<T>(steps: Generator<void, T>): Promise<T> {
  for (let r = steps.next(); ; r = steps.next()) {
    if (r.done) return r.value;
    await nextTurn();
  }
}

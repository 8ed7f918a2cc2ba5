// Logs a collector's failure when it starts or changes, and its recovery, not on every scrape.
import type { Logger } from '../log.js';
import type { CollectorResult } from './types.js';

export function collectorLog(log: Logger): (c: CollectorResult) => void {
  const lastError = new Map<string, string | undefined>();
  return (c) => {
    if (lastError.get(c.name) === c.error) return;
    const before = lastError.get(c.name);
    lastError.set(c.name, c.error);
    if (c.error) log.warn('collector failed', { collector: c.name, err: c.error });
    else if (before !== undefined) log.info('collector recovered', { collector: c.name });
  };
}

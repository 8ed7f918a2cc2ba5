// Metric families as plain data, built from a snapshot by pure functions and serialised by render.ts.

export type MetricType = 'gauge' | 'counter' | 'histogram';
export type Labels = Record<string, string>;

export interface Sample {
  labels: Labels;
  value: number;
  /** histogram series: `_bucket`, `_sum` or `_count` */
  suffix?: '_bucket' | '_sum' | '_count';
}

export interface MetricFamily {
  /** full name; counters end in `_total` */
  name: string;
  help: string;
  type: MetricType;
  samples: Sample[];
}

export const PREFIX = 'hybridpoll_';

/** A family with one sample per item; items mapping to undefined are skipped. */
export function family<T>(
  name: string,
  type: MetricType,
  help: string,
  items: readonly T[],
  sample: (item: T) => Sample | undefined,
): MetricFamily {
  return { name: PREFIX + name, type, help, samples: items.map(sample).filter((s): s is Sample => s !== undefined) };
}

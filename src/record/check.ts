// Small typed validators for parsed JSON. Each checker returns the value with the declared type or
// throws a CheckError naming the path of the offending field, e.g. `bpf.devices[0].hists.spin.count`.
// Typed field maps make the compiler insist that every field of a type has a checker.

export class CheckError extends Error {
  constructor(
    readonly path: string,
    readonly reason: string,
  ) {
    super(`${path || 'value'}: ${reason}`);
    this.name = 'CheckError';
  }
}

export type Check<T> = (v: unknown, path: string) => T;

const describe = (v: unknown): string => (v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v);

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export const num: Check<number> = (v, path) => {
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new CheckError(path, `expected a finite number, got ${describe(v)}`);
  return v;
};

/** Counts, sums and times: finite and ≥ 0. */
export const nonNegative: Check<number> = (v, path) => {
  const n = num(v, path);
  if (n < 0) throw new CheckError(path, `expected a number ≥ 0, got ${n}`);
  return n;
};

export const int = (min: number, max: number): Check<number> => (v, path) => {
  const n = num(v, path);
  if (!Number.isInteger(n) || n < min || n > max) throw new CheckError(path, `expected an integer in [${min}, ${max}], got ${n}`);
  return n;
};

export const str: Check<string> = (v, path) => {
  if (typeof v !== 'string') throw new CheckError(path, `expected a string, got ${describe(v)}`);
  return v;
};

export const bool: Check<boolean> = (v, path) => {
  if (typeof v !== 'boolean') throw new CheckError(path, `expected true or false, got ${describe(v)}`);
  return v;
};

export const oneOf = <const T extends string>(values: readonly T[]): Check<T> => (v, path) => {
  if (typeof v !== 'string' || !(values as readonly string[]).includes(v)) {
    throw new CheckError(path, `expected one of ${values.join(', ')}, got ${JSON.stringify(v)}`);
  }
  return v as T;
};

export const literal = <const T extends string | number>(value: T): Check<T> => (v, path) => {
  if (v !== value) throw new CheckError(path, `expected ${JSON.stringify(value)}, got ${JSON.stringify(v)}`);
  return value;
};

export const nullable = <T>(c: Check<T>): Check<T | null> => (v, path) => (v === null ? null : c(v, path));

/** Marks a field that may be absent; absent and undefined fields are left out of the result. */
export const optional = <T>(c: Check<T>): Check<T | undefined> => (v, path) => (v === undefined ? undefined : c(v, path));

export const array = <T>(c: Check<T>): Check<T[]> => (v, path) => {
  if (!Array.isArray(v)) throw new CheckError(path, `expected an array, got ${describe(v)}`);
  return v.map((x, i) => c(x, `${path}[${i}]`));
};

/** An array whose elements are told apart by `key` (a device, a ring): a repeated key is refused, as it would repeat a series. */
export const keyedArray = <T>(c: Check<T>, key: (x: T) => string, what: string): Check<T[]> => (v, path) => {
  const xs = array(c)(v, path);
  const seen = new Set<string>();
  xs.forEach((x, i) => {
    const k = key(x);
    if (seen.has(k)) throw new CheckError(`${path}[${i}]`, `${what} ${JSON.stringify(k)} appears twice`);
    seen.add(k);
  });
  return xs;
};

export const tuple2 = <A, B>(a: Check<A>, b: Check<B>): Check<[A, B]> => (v, path) => {
  if (!Array.isArray(v) || v.length !== 2) throw new CheckError(path, `expected a pair, got ${describe(v)}`);
  return [a(v[0], `${path}[0]`), b(v[1], `${path}[1]`)];
};

/** An object with exactly the declared fields checked; unknown fields are dropped. */
export const object = <T extends object>(fields: { [K in keyof T]-?: Check<T[K]> }): Check<T> => (v, path) => {
  if (!isPlainObject(v)) throw new CheckError(path, `expected an object, got ${describe(v)}`);
  const out: Record<string, unknown> = {};
  for (const [k, c] of Object.entries(fields) as [string, Check<unknown>][]) {
    const x = c(v[k], path ? `${path}.${k}` : k);
    if (x !== undefined) out[k] = x;
  }
  return out as T;
};

/** A string-keyed map whose values all pass one checker. */
export const record = <T>(c: Check<T>): Check<Record<string, T>> => (v, path) => {
  if (!isPlainObject(v)) throw new CheckError(path, `expected an object, got ${describe(v)}`);
  const out: Record<string, T> = {};
  for (const [k, x] of Object.entries(v)) out[k] = c(x, `${path}.${k}`);
  return out;
};

/** A map over a closed set of keys, any of them absent; unknown keys are refused. */
export const partialRecord = <K extends string, T>(keys: readonly K[], c: Check<T>): Check<Partial<Record<K, T>>> => (v, path) => {
  if (!isPlainObject(v)) throw new CheckError(path, `expected an object, got ${describe(v)}`);
  const out: Partial<Record<K, T>> = {};
  for (const [k, x] of Object.entries(v)) {
    if (!(keys as readonly string[]).includes(k)) throw new CheckError(`${path}.${k}`, `unknown key; expected one of ${keys.join(', ')}`);
    out[k as K] = c(x, `${path}.${k}`);
  }
  return out;
};

/** Outcome of a pure parser: a value, or a one-line reason why the input was rejected. */
export type Parsed<T> = { ok: true; value: T } | { ok: false; error: string };

export const ok = <T>(value: T): Parsed<T> => ({ ok: true, value });
export const fail = <T = never>(error: string): Parsed<T> => ({ ok: false, error });

/** Shorten untrusted text for an error message (kernel files are data, not trusted strings). */
export function quote(text: string, max = 60): string {
  const s = JSON.stringify(text.length > max ? `${text.slice(0, max)}…` : text);
  return s;
}

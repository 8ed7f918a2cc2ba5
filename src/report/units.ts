// Number formatting shared by the text and HTML reports.

/** ns → "425 ns", "0.43 µs"-style: µs with 2 significant decimals below 10 µs, ms and s above. */
export function duration(ns: number): string {
  const a = Math.abs(ns);
  if (a < 1) return '0 µs';
  if (a < 10_000) return `${(ns / 1000).toFixed(2)} µs`;
  if (a < 1_000_000) return `${(ns / 1000).toFixed(1)} µs`;
  if (a < 1e9) return `${(ns / 1e6).toFixed(2)} ms`;
  return `${(ns / 1e9).toFixed(2)} s`;
}

export const percent = (x: number, digits = 1): string => `${(x * 100).toFixed(digits)}%`;

/** 1234567 → "1,234,567" (fixed locale, so output does not depend on the machine). */
export const integer = (n: number): string => Math.round(n).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ',');

export const cores = (c: number): string => `${c.toFixed(c !== 0 && Math.abs(c) < 0.1 ? 3 : 2)} cores`;

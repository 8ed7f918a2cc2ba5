// Minimal SVG building blocks for the HTML report: escaping, scales, ticks, label placement. Pure.

export const esc = (s: string): string => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

type Attrs = Record<string, string | number | undefined>;

/** `<tag a="1">children</tag>`; numbers rounded to 0.01 so output is small and stable. */
export function el(tag: string, attrs: Attrs, ...children: string[]): string {
  const a = Object.entries(attrs)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => ` ${k}="${typeof v === 'number' ? round(v) : esc(v!)}"`)
    .join('');
  return children.length === 0 ? `<${tag}${a}/>` : `<${tag}${a}>${children.join('')}</${tag}>`;
}

export const round = (v: number): string => String(Math.round(v * 100) / 100);

export interface Scale {
  (v: number): number;
  domain: [number, number];
  range: [number, number];
}

export function linear(domain: [number, number], range: [number, number]): Scale {
  const [d0, d1] = domain;
  const [r0, r1] = range;
  const k = d1 === d0 ? 0 : (r1 - r0) / (d1 - d0);
  return Object.assign((v: number) => r0 + (v - d0) * k, { domain, range });
}

/** Logarithmic scale; values ≤ 0 map to the start of the range. */
export function log(domain: [number, number], range: [number, number]): Scale {
  const l = linear([Math.log10(domain[0]), Math.log10(domain[1])], range);
  return Object.assign((v: number) => (v > 0 ? l(Math.log10(v)) : range[0]), { domain, range });
}

/** About `n` round tick values (1, 2, 5 × 10^k steps) covering [a, b]. */
export function linearTicks(a: number, b: number, n = 5): number[] {
  if (!(b > a)) return [a];
  const raw = (b - a) / n;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? 10 * mag;
  const out: number[] = [];
  for (let v = Math.ceil(a / step) * step; v <= b + step * 1e-9; v += step) out.push(Number(v.toPrecision(12)));
  return out;
}

/** 1, 2, 5 × 10^k values within [a, b] for a log axis. */
export function logTicks(a: number, b: number): number[] {
  const out: number[] = [];
  for (let e = Math.floor(Math.log10(a)); e <= Math.ceil(Math.log10(b)); e++) {
    for (const m of [1, 2, 5]) {
      const v = m * 10 ** e;
      if (v >= a * (1 - 1e-9) && v <= b * (1 + 1e-9)) out.push(Number(v.toPrecision(12)));
    }
  }
  return out;
}

export interface Box {
  x: number;
  y: number;
  w: number;
  h: number;
}

const overlaps = (a: Box, b: Box) => a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;

/** Rough width of a label in px: the report's fonts average about 0.58 em per character. */
export const textWidth = (text: string, fontPx: number) => text.length * fontPx * 0.58;

export interface Placed {
  /** baseline position and anchor of the text */
  x: number;
  y: number;
  anchor: 'start' | 'end';
  /** true when no free spot was found near the point and the label sits on the first candidate anyway */
  crowded: boolean;
}

/**
 * Places one label per point, in the given order (most important first): the first of a ring of
 * candidate spots around the point (right, left, above, below, then further out) whose box stays
 * inside `area` and clears every point and every label placed before it.
 */
export function placeLabels(points: { x: number; y: number; label: string }[], fontPx: number, area: Box, pointRadius = 7): Placed[] {
  const taken: Box[] = points.map((p) => ({ x: p.x - pointRadius, y: p.y - pointRadius, w: 2 * pointRadius, h: 2 * pointRadius }));
  const h = fontPx + 2;
  return points.map((p, k) => {
    const w = textWidth(p.label, fontPx);
    const own = taken[k]!;
    const candidates: { dx: number; dy: number; anchor: 'start' | 'end' }[] = [];
    for (const dy of [0, -1, 1, -2, 2, -3, 3, -4, 4, -5, 5, -6, 6]) {
      candidates.push({ dx: 10, dy: dy * h, anchor: 'start' }, { dx: -10, dy: dy * h, anchor: 'end' });
    }
    for (const c of candidates) {
      const bx = c.anchor === 'start' ? p.x + c.dx : p.x + c.dx - w;
      const box = { x: bx, y: p.y + c.dy - h / 2, w, h };
      const inside = box.x >= area.x && box.x + box.w <= area.x + area.w && box.y >= area.y && box.y + box.h <= area.y + area.h;
      if (inside && !taken.some((t) => t !== own && overlaps(t, box))) {
        taken.push(box);
        return { x: p.x + c.dx, y: p.y + c.dy + fontPx / 2 - 1, anchor: c.anchor, crowded: false };
      }
    }
    const fallback = p.x + 10 + w <= area.x + area.w;
    return { x: fallback ? p.x + 10 : p.x - 10, y: p.y + fontPx / 2 - 1, anchor: fallback ? 'start' : 'end', crowded: true };
  });
}

// Parsers for debugfs block/<dev>/hctx<N>/{type,io_poll}.
import type { HctxIoPoll, HctxType } from './types.js';
import { fail, ok, quote, type Parsed } from './result.js';

const TYPES: readonly HctxType[] = ['default', 'read', 'poll'];

/** hctx<N>/type: "default", "read" or "poll". */
export function parseHctxType(text: string): Parsed<HctxType> {
  const t = text.trim();
  return (TYPES as readonly string[]).includes(t) ? ok(t as HctxType) : fail(`unknown hctx type ${quote(t)}`);
}

/**
 * hctx<N>/io_poll (4.11–5.15): "considered=N\ninvoked=N\nsuccess=N".
 * The 4.10 sysfs form put the three on one line separated by ", "; both are accepted.
 */
export function parseHctxIoPoll(hctx: string, text: string): Parsed<HctxIoPoll> {
  const fields = new Map<string, number>();
  for (const part of text.split(/[\n,]/).map((s) => s.trim()).filter(Boolean)) {
    const m = /^(considered|invoked|success)=(\d+)$/.exec(part);
    if (!m) return fail(`io_poll field not understood: ${quote(part)}`);
    const n = Number(m[2]);
    // Beyond 2^53 the value is no longer exact and the monotonic deltas would be wrong.
    if (!Number.isSafeInteger(n)) return fail(`io_poll ${m[1]} out of range: ${quote(m[2]!)}`);
    fields.set(m[1]!, n);
  }
  const considered = fields.get('considered');
  const invoked = fields.get('invoked');
  const success = fields.get('success');
  if (considered === undefined || invoked === undefined || success === undefined) {
    return fail(`io_poll lacks considered/invoked/success: ${quote(text)}`);
  }
  return ok({ hctx, considered, invoked, success });
}

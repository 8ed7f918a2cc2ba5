// fast-check arbitraries for text parsers: arbitrary strings, and valid inputs with mutations that
// look like what goes wrong in practice (a truncated read, a new kernel's extra field, huge numbers).
import fc from 'fast-check';

/** Fragments that stress number, separator and line handling. */
const NASTY = [
  '\n', '\r\n', '\0', ' ', '\t', ',', '=', ':', '-', '+', '.', '(', ')', 'Bytes', 'samples=', 'mean=',
  '9'.repeat(17), '9'.repeat(400), '-0', '0x10', '1e9', 'NaN', 'Infinity', '\u00a0', '\u2028', '\uFEFF', 'é', '\u{1F4A9}',
];

type Mutation =
  | { k: 'delete'; at: number; len: number }
  | { k: 'insert'; at: number; text: string }
  | { k: 'dup'; at: number; len: number }
  | { k: 'digits'; at: number; text: string };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ k: fc.constant('delete' as const), at: fc.nat(), len: fc.integer({ min: 1, max: 30 }) }),
  fc.record({ k: fc.constant('insert' as const), at: fc.nat(), text: fc.oneof(fc.constantFrom(...NASTY), fc.string({ maxLength: 8, unit: 'binary' })) }),
  fc.record({ k: fc.constant('dup' as const), at: fc.nat(), len: fc.integer({ min: 1, max: 80 }) }),
  // Replace the next run of digits, keeping the shape of the line.
  fc.record({ k: fc.constant('digits' as const), at: fc.nat(), text: fc.constantFrom('', '-1', '0', '18446744073709551615', '9007199254740993', '9'.repeat(400), 'x') }),
);

function apply(t: string, m: Mutation): string {
  const at = m.at % (t.length + 1);
  switch (m.k) {
    case 'delete':
      return t.slice(0, at) + t.slice(at + m.len);
    case 'insert':
      return t.slice(0, at) + m.text + t.slice(at);
    case 'dup':
      return t.slice(0, at + m.len) + t.slice(at, at + m.len) + t.slice(at + m.len);
    case 'digits': {
      const d = /\d+/.exec(t.slice(at));
      return d ? t.slice(0, at + d.index) + m.text + t.slice(at + d.index + d[0].length) : t;
    }
  }
}

/** A valid input with 1–5 mutations applied. */
export function mutatedText(valid: readonly string[]): fc.Arbitrary<string> {
  return fc.tuple(fc.constantFrom(...valid), fc.array(mutation, { minLength: 1, maxLength: 5 })).map(([v, ms]) => ms.reduce(apply, v));
}

/** Half arbitrary text (any code unit, including lone surrogates), half mutated valid input. */
export function textInput(valid: readonly string[]): fc.Arbitrary<string> {
  return fc.oneof(fc.string({ maxLength: 300, unit: 'binary' }), fc.string({ maxLength: 64, unit: 'grapheme-ascii' }), mutatedText(valid), fc.constantFrom(...valid));
}

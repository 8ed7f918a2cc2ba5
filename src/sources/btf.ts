// Minimal reader of the kernel's BTF (/sys/kernel/btf/vmlinux): which members a struct has.
// Used to probe kernel features (docs/kernel.md §6.1) without loading anything into the kernel.
import { fail, ok, type Parsed } from './result.js';

const MAGIC = 0xeb9f;
const KIND_STRUCT = 4;
const KIND_UNION = 5;

/** Extra bytes that follow the 12-byte btf_type header, per kind (include/uapi/linux/btf.h). */
function extraBytes(kind: number, vlen: number): number {
  switch (kind) {
    case 1: // INT
    case 14: // VAR
    case 17: // DECL_TAG
      return 4;
    case 3: // ARRAY
      return 12;
    case 4: // STRUCT
    case 5: // UNION
    case 15: // DATASEC
    case 19: // ENUM64
      return 12 * vlen;
    case 6: // ENUM
    case 13: // FUNC_PROTO
      return 8 * vlen;
    default:
      return 0;
  }
}

export interface BtfIndex {
  /** Member names of the named struct, anonymous nested structs/unions flattened. undefined if no such struct. */
  structMembers(name: string): Set<string> | undefined;
}

export function parseBtf(buf: Buffer): Parsed<BtfIndex> {
  if (buf.length < 24) return fail('BTF too short');
  if (buf.readUInt16LE(0) !== MAGIC) return fail('not little-endian BTF (bad magic)');
  const hdrLen = buf.readUInt32LE(4);
  const typeOff = hdrLen + buf.readUInt32LE(8);
  const typeLen = buf.readUInt32LE(12);
  const strOff = hdrLen + buf.readUInt32LE(16);
  const strLen = buf.readUInt32LE(20);
  if (typeOff + typeLen > buf.length || strOff + strLen > buf.length) return fail('BTF sections out of bounds');

  const name = (off: number): string => {
    if (off === 0 || off >= strLen) return '';
    const start = strOff + off;
    const end = buf.indexOf(0, start);
    return buf.toString('latin1', start, end < 0 || end > strOff + strLen ? strOff + strLen : end);
  };

  // Type ids start at 1; remember where each type starts.
  const offsets: number[] = [0];
  const structsByName = new Map<string, number>();
  let p = typeOff;
  const end = typeOff + typeLen;
  while (p + 12 <= end) {
    const info = buf.readUInt32LE(p + 4);
    const kind = (info >>> 24) & 0x1f;
    const vlen = info & 0xffff;
    offsets.push(p);
    if (kind === KIND_STRUCT) {
      const n = name(buf.readUInt32LE(p));
      if (n && !structsByName.has(n)) structsByName.set(n, offsets.length - 1);
    }
    p += 12 + extraBytes(kind, vlen);
  }
  if (p !== end) return fail('BTF type section is truncated or has an unknown kind');

  // `seen`: each type is expanded once per query, so a crafted BTF whose anonymous members refer
  // back to their own struct cannot make this walk exponential (found by test/hardening fuzzing).
  const collect = (id: number, into: Set<string>, depth: number, seen: Set<number>): void => {
    const at = offsets[id];
    if (at === undefined || depth > 8 || seen.has(id)) return;
    seen.add(id);
    const info = buf.readUInt32LE(at + 4);
    const kind = (info >>> 24) & 0x1f;
    if (kind !== KIND_STRUCT && kind !== KIND_UNION) return;
    const vlen = info & 0xffff;
    for (let i = 0; i < vlen; i++) {
      const m = at + 12 + 12 * i;
      const mName = buf.readUInt32LE(m);
      if (mName === 0) collect(buf.readUInt32LE(m + 4), into, depth + 1, seen);
      else into.add(name(mName));
    }
  };

  return ok({
    structMembers(structName: string) {
      const id = structsByName.get(structName);
      if (id === undefined) return undefined;
      const members = new Set<string>();
      collect(id, members, 0, new Set());
      return members;
    },
  });
}

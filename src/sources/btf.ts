// Minimal reader of the kernel's BTF (/sys/kernel/btf/vmlinux): which members a struct has.
// Used to probe kernel features (docs/kernel.md §6.1) without loading anything into the kernel.
// It reads the ~6 MB blob where it lies, in windows and by the few records a query needs: a copy
// of the whole file stayed resident until V8's next full GC, 8 MiB of a 1-device exporter's RSS
// (bench/README.md, "The kernel's BTF, read in place").
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

/** Bytes of the blob by position: a Buffer's, or a file's read in place (files.ts withPositionalFile). */
export interface ByteSource {
  readonly size: number;
  /** Up to `length` bytes from `offset`, fewer only at the end; valid until the next read. */
  read(offset: number, length: number): Buffer;
}

export interface BtfIndex {
  /** Member names of the named struct, anonymous nested structs/unions flattened. undefined if no such struct. */
  structMembers(name: string): Set<string> | undefined;
}

/** The blob is read this many bytes at a time: 16 kernfs reads of a page each, through one buffer. */
const WINDOW = 64 * 1024;

const bufferSource = (buf: Buffer): ByteSource => ({ size: buf.length, read: (o, l) => buf.subarray(o, o + l) });

/**
 * The index holds the type offsets and each struct's name offset, no names: a query finds its
 * name's offsets in the string section. Queries read `data`: with a file, query before it closes.
 */
export function parseBtf(data: Buffer | ByteSource): Parsed<BtfIndex> {
  const src = Buffer.isBuffer(data) ? bufferSource(data) : data;
  const hdr = src.read(0, 24);
  if (hdr.length < 24) return fail('BTF too short');
  if (hdr.readUInt16LE(0) !== MAGIC) return fail('not little-endian BTF (bad magic)');
  const hdrLen = hdr.readUInt32LE(4);
  const typeOff = hdrLen + hdr.readUInt32LE(8);
  const typeLen = hdr.readUInt32LE(12);
  const strOff = hdrLen + hdr.readUInt32LE(16);
  const strLen = hdr.readUInt32LE(20);
  if (typeOff + typeLen > src.size || strOff + strLen > src.size) return fail('BTF sections out of bounds');

  // Type ids start at 1; remember where each type starts, and the first struct per name offset.
  let offsets: Uint32Array = new Uint32Array(4096);
  let count = 1;
  const structByNameOff = new Map<number, number>();
  const end = typeOff + typeLen;
  let win: Buffer = Buffer.alloc(0);
  let winAt = 0;
  let p = typeOff;
  while (p + 12 <= end) {
    if (p + 12 > winAt + win.length) {
      win = src.read(p, Math.min(WINDOW, end - p));
      winAt = p;
    }
    const info = win.readUInt32LE(p - winAt + 4);
    const kind = (info >>> 24) & 0x1f;
    const vlen = info & 0xffff;
    if (count === offsets.length) offsets = grown(offsets);
    offsets[count++] = p;
    if (kind === KIND_STRUCT) {
      const nameOff = win.readUInt32LE(p - winAt);
      if (nameOff !== 0 && nameOff < strLen && !structByNameOff.has(nameOff)) structByNameOff.set(nameOff, count - 1);
    }
    p += 12 + extraBytes(kind, vlen);
  }
  if (p !== end) return fail('BTF type section is truncated or has an unknown kind');

  const strings = { src, at: strOff, len: strLen };
  // `seen`: each type is expanded once per query, so a crafted BTF whose anonymous members refer
  // back to their own struct cannot make this walk exponential (found by test/hardening fuzzing).
  const collect = (id: number, into: Set<string>, depth: number, seen: Set<number>): void => {
    if (id <= 0 || id >= count || depth > 8 || seen.has(id)) return;
    seen.add(id);
    const at = offsets[id]!;
    const info = src.read(at + 4, 4).readUInt32LE(0);
    const kind = (info >>> 24) & 0x1f;
    if (kind !== KIND_STRUCT && kind !== KIND_UNION) return;
    // A copy: the nested collect() below reads again.
    const members = Buffer.from(src.read(at + 12, 12 * (info & 0xffff)));
    for (let m = 0; m + 12 <= members.length; m += 12) {
      const mName = members.readUInt32LE(m);
      if (mName === 0) collect(members.readUInt32LE(m + 4), into, depth + 1, seen);
      else into.add(stringAt(strings, mName));
    }
  };

  return ok({
    structMembers(structName: string) {
      let id: number | undefined;
      for (const off of offsetsOf(strings, structName)) {
        const s = structByNameOff.get(off);
        if (s !== undefined && (id === undefined || s < id)) id = s;
      }
      if (id === undefined) return undefined;
      const members = new Set<string>();
      collect(id, members, 0, new Set());
      return members;
    },
  });
}

function grown(a: Uint32Array): Uint32Array {
  const b = new Uint32Array(a.length * 2);
  b.set(a);
  return b;
}

interface Strings {
  src: ByteSource;
  at: number;
  len: number;
}

/** The string at `off`, ended by its NUL or by the section's end; '' for offset 0 and offsets past the section. */
function stringAt(s: Strings, off: number): string {
  if (off === 0 || off >= s.len) return '';
  let str = '';
  for (let at = off; at < s.len; at += 256) {
    const chunk = s.src.read(s.at + at, Math.min(256, s.len - at));
    const nul = chunk.indexOf(0);
    str += chunk.toString('latin1', 0, nul < 0 ? chunk.length : nul);
    if (nul >= 0) break;
  }
  return str;
}

/**
 * Every offset whose string is `name` (stringAt(off) === name): each match of name + NUL, the
 * section's end counting as a NUL, read in overlapping windows. A name offset may point into
 * another string's tail, so a match need not follow a NUL.
 */
function offsetsOf(s: Strings, name: string): number[] {
  if (!name) return [];
  const pat = Buffer.from(`${name}\0`, 'latin1');
  const found: number[] = [];
  for (let at = 1; at < s.len; at += WINDOW) {
    const last = at + WINDOW + pat.length - 1 >= s.len;
    const chunk = s.src.read(s.at + at, Math.min(WINDOW + pat.length - 1, s.len - at));
    const hay = last ? Buffer.concat([chunk, Buffer.alloc(1)]) : chunk;
    // Matches starting in this window; the last one takes all (its end may lie past at + WINDOW).
    for (let i = hay.indexOf(pat); i >= 0 && (last || i < WINDOW); i = hay.indexOf(pat, i + 1)) found.push(at + i);
    if (last) break;
  }
  return found;
}

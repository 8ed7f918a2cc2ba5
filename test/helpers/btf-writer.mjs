// Writes minimal little-endian BTF blobs holding just the structs the era probe looks at.
// Used to build the fixture trees' sys/kernel/btf/vmlinux and by the BTF parser tests.

/**
 * @typedef {string | { anon: Member[], union?: boolean }} Member
 * @param {{ name: string, members: Member[] }[]} structs
 * @returns {Buffer}
 */
export function writeBtf(structs) {
  const strings = ['']; // offset 0 is the empty name
  const strOff = new Map([['', 0]]);
  let strLen = 1;
  const str = (s) => {
    if (!strOff.has(s)) {
      strOff.set(s, strLen);
      strings.push(s);
      strLen += Buffer.byteLength(s) + 1;
    }
    return strOff.get(s);
  };
  /** @type {Buffer[]} */
  const types = [];
  const add = (buf) => (types.push(buf), types.length); // type ids start at 1

  const intId = add(typeHeader(str('u64'), 1, 0, 8, Buffer.from([64, 0, 0, 0])));
  const struct = (name, members, union = false) => {
    const memberBufs = members.map((m) => {
      const b = Buffer.alloc(12);
      if (typeof m === 'string') {
        b.writeUInt32LE(str(m), 0);
        b.writeUInt32LE(intId, 4);
      } else {
        b.writeUInt32LE(0, 0);
        b.writeUInt32LE(struct('', m.anon, m.union), 4);
      }
      return b;
    });
    return add(typeHeader(name ? str(name) : 0, union ? 5 : 4, members.length, 8 * members.length, Buffer.concat(memberBufs)));
  };
  for (const s of structs) struct(s.name, s.members);

  const typeSec = Buffer.concat(types);
  const strSec = Buffer.concat(strings.map((s) => Buffer.concat([Buffer.from(s), Buffer.from([0])])));
  const hdr = Buffer.alloc(24);
  hdr.writeUInt16LE(0xeb9f, 0);
  hdr.writeUInt8(1, 2);
  hdr.writeUInt8(0, 3);
  hdr.writeUInt32LE(24, 4);
  hdr.writeUInt32LE(0, 8);
  hdr.writeUInt32LE(typeSec.length, 12);
  hdr.writeUInt32LE(typeSec.length, 16);
  hdr.writeUInt32LE(strSec.length, 20);
  return Buffer.concat([hdr, typeSec, strSec]);
}

function typeHeader(nameOff, kind, vlen, size, extra) {
  const b = Buffer.alloc(12);
  b.writeUInt32LE(nameOff, 0);
  b.writeUInt32LE(((kind & 0x1f) << 24) | (vlen & 0xffff), 4);
  b.writeUInt32LE(size, 8);
  return Buffer.concat([b, extra]);
}

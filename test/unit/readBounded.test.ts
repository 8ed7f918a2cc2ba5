// readBounded on the live kernel's files: a kernfs binary attribute returns one page per read, so
// a short read is not always the end (a 5 MB BTF once came back as its first 12 KiB, and era
// detection by BTF failed on every kernel with "BTF sections out of bounds").
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseBtf } from '../../src/sources/btf.js';
import { readBounded, withPositionalFile } from '../../src/sources/files.js';

const BTF = '/sys/kernel/btf/vmlinux';
const noBtf = !existsSync(BTF);
if (noBtf) console.warn(`*** ${BTF} missing: the kernfs binary attribute read is SKIPPED ***`);
// Under CI=true a missing bpftool fails the check instead (scripts/setup.sh installs it).
const noBpftool = spawnSync('bpftool', ['version']).status !== 0 && process.env.CI !== 'true';
if (noBpftool) console.warn('*** bpftool missing (scripts/setup.sh installs it): the BTF check against bpftool is SKIPPED ***');

describe('readBounded', () => {
  it.skipIf(noBtf)('reads a kernfs binary attribute whole (the kernel BTF, page by page)', async () => {
    const b = await readBounded(BTF, 256 * 1024 * 1024);
    expect(b.length).toBe(statSync(BTF).size);
    expect(b.readUInt16LE(0)).toBe(0xeb9f); // BTF magic
  });
  it('reads regular files whole, also at page multiples and beyond the first buffer', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hp-read-'));
    try {
      for (const size of [0, 1, 4095, 4096, 8192, 12288, 100_000]) {
        const f = join(dir, `f${size}`);
        writeFileSync(f, Buffer.alloc(size, 7));
        expect((await readBounded(f, 1 << 20)).length, `size ${size}`).toBe(size);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('withPositionalFile (the kernel BTF, read in place once per process)', () => {
  it.skipIf(noBtf)('reads the kernel BTF by position: its size, its first and its last bytes', () => {
    const whole = readFileSync(BTF);
    withPositionalFile(BTF, 256 * 1024 * 1024, (f) => {
      expect(f.size).toBe(whole.length);
      expect(f.read(0, 24).equals(whole.subarray(0, 24))).toBe(true);
      // Across page boundaries (kernfs: one page per read) and cut at the end of the file.
      expect(f.read(4000, 70_000).equals(whole.subarray(4000, 74_000))).toBe(true);
      expect(f.read(whole.length - 10, 100).equals(whole.subarray(whole.length - 10))).toBe(true);
      expect(f.read(whole.length + 5, 10).length).toBe(0);
    });
  });
  it.skipIf(noBtf || noBpftool)('parses the kernel BTF in place to the members bpftool lists', () => {
    const oracle = bpftoolStructs(BTF);
    withPositionalFile(BTF, 256 * 1024 * 1024, (f) => {
      const btf = parseBtf(f);
      if (!btf.ok) throw new Error(btf.error);
      const fromBuffer = parseBtf(readFileSync(BTF));
      if (!fromBuffer.ok) throw new Error(fromBuffer.error);
      for (const name of ['io_ring_ctx', 'request_queue', 'blk_mq_hw_ctx', 'task_struct', 'sk_buff', 'bio']) {
        const want = oracle(name);
        expect(want?.size, name).toBeGreaterThan(3);
        expect([...(btf.value.structMembers(name) ?? [])].sort(), name).toEqual([...want!].sort());
        expect([...(fromBuffer.value.structMembers(name) ?? [])].sort(), name).toEqual([...want!].sort());
      }
      expect(btf.value.structMembers('no_such_struct_here')).toBeUndefined();
    });
  });
  it('refuses oversized files and symlinks, and does not block on a FIFO', () => {
    const dir = mkdtempSync(join(tmpdir(), 'hp-read-'));
    try {
      const f = join(dir, 'big');
      writeFileSync(f, Buffer.alloc(3 << 20, 1));
      expect(withPositionalFile(f, 3 << 20, (r) => r.read(0, 4 << 20).length)).toBe(3 << 20);
      expect(() => withPositionalFile(f, (3 << 20) - 1, () => 0)).toThrow(/larger than/);
      symlinkSync(f, join(dir, 'link'));
      expect(() => withPositionalFile(join(dir, 'link'), 1 << 30, () => 0)).toThrow(/symbolic link/);
      execFileSync('mkfifo', [join(dir, 'fifo')]);
      // No writer: O_NONBLOCK opens at once and the FIFO reads as empty, where a blocking open would wait forever.
      const r = withPositionalFile(join(dir, 'fifo'), 1 << 20, (fifo) => parseBtf(fifo));
      expect(r.ok ? '' : r.error).toBe('BTF too short');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/**
 * An independent reading of the same BTF: bpftool's raw dump, anonymous members flattened as
 * parseBtf does, the first struct of a name (lowest id) taken.
 */
function bpftoolStructs(path: string): (name: string) => Set<string> | undefined {
  const dump = execFileSync('bpftool', ['btf', 'dump', 'file', path, 'format', 'raw'], { maxBuffer: 1 << 30 }).toString();
  const types = new Map<number, { kind: string; members: { name: string; type: number }[] }>();
  const firstByName = new Map<string, number>();
  let current: { kind: string; members: { name: string; type: number }[] } | undefined;
  for (const line of dump.split('\n')) {
    const t = /^\[(\d+)\] (\w+) '([^']*)'/.exec(line);
    if (t) {
      current = { kind: t[2]!, members: [] };
      types.set(Number(t[1]), current);
      if (t[2] === 'STRUCT' && t[3] !== '(anon)' && !firstByName.has(t[3]!)) firstByName.set(t[3]!, Number(t[1]));
      continue;
    }
    const m = /^\t'([^']*)' type_id=(\d+)/.exec(line);
    if (m && current && (current.kind === 'STRUCT' || current.kind === 'UNION')) current.members.push({ name: m[1]!, type: Number(m[2]) });
  }
  const collect = (id: number, into: Set<string>, depth: number): void => {
    const t = types.get(id);
    if (!t || depth > 8) return;
    for (const m of t.members) {
      if (m.name === '(anon)') collect(m.type, into, depth + 1);
      else into.add(m.name);
    }
  };
  return (name) => {
    const id = firstByName.get(name);
    if (id === undefined) return undefined;
    const into = new Set<string>();
    collect(id, into, 0);
    return into;
  };
}

// readBounded on the live kernel's files: a kernfs binary attribute returns one page per read, so
// a short read is not always the end (a 5 MB BTF once came back as its first 12 KiB, and era
// detection by BTF failed on every kernel with "BTF sections out of bounds").
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readBounded, readBoundedSync } from '../../src/sources/files.js';

const BTF = '/sys/kernel/btf/vmlinux';
const noBtf = !existsSync(BTF);
if (noBtf) console.warn(`*** ${BTF} missing: the kernfs binary attribute read is SKIPPED ***`);

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

describe('readBoundedSync (the kernel BTF, once per process)', () => {
  it.skipIf(noBtf)('reads the kernel BTF whole', () => {
    const b = readBoundedSync(BTF, 256 * 1024 * 1024);
    expect(b.length).toBe(statSync(BTF).size);
    expect(b.readUInt16LE(0)).toBe(0xeb9f);
  });
  it('refuses oversized files and symlinks, and does not block on a FIFO', () => {
    const dir = mkdtempSync(join(tmpdir(), 'hp-read-'));
    try {
      const f = join(dir, 'big');
      writeFileSync(f, Buffer.alloc(3 << 20, 1));
      expect(readBoundedSync(f, 3 << 20).length).toBe(3 << 20);
      expect(() => readBoundedSync(f, (3 << 20) - 1)).toThrow(/larger than/);
      symlinkSync(f, join(dir, 'link'));
      expect(() => readBoundedSync(join(dir, 'link'), 1 << 30)).toThrow(/symbolic link/);
      execFileSync('mkfifo', [join(dir, 'fifo')]);
      // No writer: O_NONBLOCK reads end at once (empty), where a blocking read would wait forever.
      expect(readBoundedSync(join(dir, 'fifo'), 1 << 20).length).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

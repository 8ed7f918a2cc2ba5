// Fixture trees (sysfs + debugfs + procfs) written into temporary directories by tests.
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { ROOT, TMP_PREFIX } from './proc.js';

export interface Tree {
  root: string;
  sys: string;
  debug: string;
  proc: string;
  /** --path.* flags for this tree */
  args: string[];
  write(rel: string, content: string | Buffer): string;
  remove(rel: string): void;
  dispose(): void;
}

/** A fresh tree, optionally a copy of one of test/fixtures. */
export function makeTree(copyOf?: string): Tree {
  const root = mkdtempSync(join(tmpdir(), `${TMP_PREFIX}tree-`));
  if (copyOf) cpSync(join(ROOT, 'test/fixtures', copyOf), root, { recursive: true });
  for (const d of ['sys/block', 'debug/block', 'proc/sys/kernel']) mkdirSync(join(root, d), { recursive: true });
  const t: Tree = {
    root,
    sys: join(root, 'sys'),
    debug: join(root, 'debug'),
    proc: join(root, 'proc'),
    args: [`--path.sysfs=${join(root, 'sys')}`, `--path.debugfs=${join(root, 'debug')}`, `--path.procfs=${join(root, 'proc')}`],
    write(rel, content) {
      const p = join(root, rel);
      mkdirSync(dirname(p), { recursive: true });
      writeFileSync(p, content);
      return p;
    },
    remove(rel) {
      rmSync(join(root, rel), { recursive: true, force: true });
    },
    dispose() {
      rmSync(root, { recursive: true, force: true });
    },
  };
  return t;
}

const SIZES = [512, 1024, 2048, 4096, 8192, 16384, 32768, 65536];

/** A 16-line poll_stat with samples on every read line. */
export function pollStatText(seed = 1): string {
  return SIZES.flatMap((s, i) => [
    `read  (${s} Bytes): samples=${seed + i}, mean=${9000 + 100 * i}, min=${8000 + i}, max=${30000 + i}`,
    `write (${s} Bytes): samples=0`,
  ]).join('\n') + '\n';
}

/** One NVMe-like device: sysfs attributes and, with hctx types, debugfs entries. */
export function writeDevice(t: Tree, name: string, o: { dev: string; ioPoll?: number; delay?: number; hctx?: string[]; pollStat?: string }): void {
  t.write(`sys/block/${name}/dev`, `${o.dev}\n`);
  t.write(`sys/block/${name}/queue/io_poll`, `${o.ioPoll ?? 1}\n`);
  t.write(`sys/block/${name}/queue/io_poll_delay`, `${o.delay ?? -1}\n`);
  if (o.pollStat !== undefined) t.write(`debug/block/${name}/poll_stat`, o.pollStat);
  (o.hctx ?? []).forEach((type, i) => t.write(`debug/block/${name}/hctx${i}/type`, `${type}\n`));
}

// Fixture host for the scrape benchmark: N NVMe namespaces in a sysfs + debugfs + procfs tree that
// both exporters read. hybridpoll-exporter reads queue/io_poll*, dev, poll_stat and hctx*/;
// node_exporter's diskstats collector reads proc/diskstats (and udev data, given an empty dir).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

const SIZES = [512, 1024, 2048, 4096, 8192, 16384, 32768, 65536];

/** dev_t of namespace i: 259:i, as the fake loader numbers its devices. */
export const devOf = (i) => `259:${i}`;
export const nameOf = (i) => `nvme${i}n1`;

export function makeHost(devices) {
  const root = mkdtempSync(join(tmpdir(), 'hp-bench-scrape-'));
  const put = (rel, text) => {
    const p = join(root, rel);
    mkdirSync(dirname(p), { recursive: true });
    writeFileSync(p, text);
  };
  put('proc/sys/kernel/osrelease', '6.1.0-18-amd64\n');
  put('sys/module/nvme/parameters/poll_queues', '4\n');
  const diskstats = [];
  for (let i = 0; i < devices; i++) {
    const name = nameOf(i);
    put(`sys/block/${name}/dev`, `${devOf(i)}\n`);
    put(`sys/block/${name}/queue/io_poll`, '1\n');
    put(`sys/block/${name}/queue/io_poll_delay`, '0\n');
    put(`sys/block/${name}/queue/rotational`, '0\n');
    put(`sys/block/${name}/queue/logical_block_size`, '512\n');
    put(`sys/block/${name}/stat`, '  1000 0 8000 500 2000 0 16000 900 0 1200 1400 0 0 0 0 0 0\n');
    // poll_stat with samples on every line (the 4.12–6.3 format) and 8 hardware queues, 4 of them poll.
    put(`debug/block/${name}/poll_stat`, SIZES.flatMap((s, k) => [
      `read  (${s} Bytes): samples=${10 + k}, mean=${9000 + 100 * k}, min=${8000 + k}, max=${30000 + k}`,
      `write (${s} Bytes): samples=${5 + k}, mean=${14000 + 100 * k}, min=${11000 + k}, max=${40000 + k}`,
    ]).join('\n') + '\n');
    ['default', 'default', 'read', 'read', 'poll', 'poll', 'poll', 'poll'].forEach((t, h) => {
      put(`debug/block/${name}/hctx${h}/type`, `${t}\n`);
    });
    diskstats.push(`259 ${i} ${name} 1000 0 8000 500 2000 0 16000 900 0 1200 1400 0 0 0 0 0 0`);
  }
  put('proc/diskstats', `${diskstats.join('\n')}\n`);
  mkdirSync(join(root, 'udev'), { recursive: true });
  return {
    root,
    sys: join(root, 'sys'),
    debug: join(root, 'debug'),
    proc: join(root, 'proc'),
    udev: join(root, 'udev'),
    dispose: () => rmSync(root, { recursive: true, force: true }),
  };
}

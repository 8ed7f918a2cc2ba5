// Scrape bodies: rendered once per snapshot and format (Prometheus text by the refresh loop,
// OpenMetrics on its first request), kept as bytes, and served with a few live lines appended at
// serve time: the age of the snapshot, and the refresh loop's own health.
import { promisify } from 'node:util';
import { constants, crc32, deflateRaw as deflateRawCb } from 'node:zlib';
import type { Registry } from 'prom-client';
import type { BpfExposition } from '../metrics/bpf.js';
import { serialize } from '../metrics/exposition.js';
import { family, type MetricFamily } from '../metrics/family.js';
import { familyGroups } from '../metrics/index.js';
import { renderYielding, type Format } from '../metrics/render.js';
import type { Snapshot } from '../snapshot/types.js';

const EOF = Buffer.from('# EOF\n');
const deflateRaw = promisify(deflateRawCb);

/**
 * zlib's fastest level. At 64 devices it deflates the body in 3.0 ms where level 6 took 8.3 (every
 * histogram: 4.4 against 16.9 ms), a quarter of a collection's CPU, for 33 % more bytes (95 against
 * 71 kB; 183 against 154 kB): under 2 kB/s more at a 15 s scrape, against CPU on every node.
 */
export const DEFLATE_LEVEL = 1;

/** How the body goes out: gzip when the client accepts it (Prometheus always does). */
export type Encoding = 'gzip' | 'identity';

/** The cached part of a body as an open raw deflate stream (ends on a sync flush), and its CRC-32 and size. */
interface Deflated {
  deflated: Buffer;
  crc: number;
  size: number;
}

/** RFC 1952 member header: deflate, no flags, no mtime, unknown OS. */
const GZIP_HEADER = Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff]);

/**
 * The end of a gzip member whose deflate stream (the cached part) is still open: the live lines
 * as a final stored block (RFC 1951 3.2.4), then the CRC-32 and size of everything. One member,
 * so every gzip reader takes it whole (curl stops after the first of several members).
 */
export function closingGzip(live: Buffer, crcBefore: number, sizeBefore: number): Buffer {
  if (live.length > 0xffff) throw new Error('live lines longer than one stored block');
  const out = Buffer.alloc(5 + live.length + 8);
  out[0] = 1; // BFINAL, BTYPE 00 (stored); byte-aligned after the sync flush
  out.writeUInt16LE(live.length, 1);
  out.writeUInt16LE(~live.length & 0xffff, 3);
  live.copy(out, 5);
  out.writeUInt32LE(crc32(live, crcBefore) >>> 0, 5 + live.length);
  out.writeUInt32LE((sizeBefore + live.length) % 2 ** 32, 9 + live.length);
  return out;
}

/** The refresh loop as the scrape sees it (absent when every scrape takes its own snapshot). */
export interface RefreshStatus {
  intervalSeconds: number;
  skippedTicks(): number;
}

export interface BodyOptions {
  bpf?: BpfExposition;
  /** process_* and nodejs_* metrics, as of the rendering (the refresh), not of the scrape */
  processMetrics?: Registry;
  refresh?: RefreshStatus;
  /** wall clock, ms; injectable for tests */
  now?: () => number;
}

/**
 * make() once per snapshot and format, shared by every caller meanwhile. A failure (a bug: a
 * family exposed twice) is not kept: the next scrape retries.
 */
function once<T>(memo: WeakMap<Snapshot, Map<Format, Promise<T>>>, snap: Snapshot, format: Format, make: () => Promise<T>): Promise<T> {
  let byFormat = memo.get(snap);
  if (!byFormat) memo.set(snap, (byFormat = new Map()));
  let p = byFormat.get(format);
  if (!p) {
    p = make();
    p.catch(() => byFormat.delete(format));
    byFormat.set(format, p);
  }
  return p;
}

export class ScrapeBodies {
  // Scrapes that share a snapshot share its rendering: N concurrent scrapers must not cost N
  // renders (test/hardening/load.test.ts). Weak: gone with the snapshot.
  private readonly rendered = new WeakMap<Snapshot, Map<Format, Promise<Buffer>>>();
  private readonly compressed = new WeakMap<Snapshot, Map<Format, Promise<Deflated>>>();
  private readonly now: () => number;
  /** each format's last body size: the next is about as large (its buffer is allocated once) */
  private readonly lastBytes = new Map<Format, number>();

  constructor(private readonly o: BodyOptions) {
    this.now = o.now ?? Date.now;
  }

  /**
   * The cached part of a scrape body: every family of the snapshot, without OpenMetrics' final
   * `# EOF` (the live lines go before it).
   */
  cached(snap: Snapshot, format: Format): Promise<Buffer> {
    return once(this.rendered, snap, format, () =>
      renderYielding(familyGroups(snap, this.o.bpf ? { bpf: this.o.bpf } : {}), format, this.o.processMetrics, this.lastBytes.get(format))
        .then((bytes) => {
          this.lastBytes.set(format, bytes.length);
          return format === 'openmetrics' && bytes.subarray(-EOF.length).equals(EOF) ? bytes.subarray(0, -EOF.length) : bytes;
        }));
  }

  /**
   * The cached part, deflated once per snapshot and format on the thread pool and left open (a
   * sync flush, no final block), with its CRC-32: each scrape closes the stream with the live lines.
   */
  private cachedDeflated(snap: Snapshot, format: Format): Promise<Deflated> {
    return once(this.compressed, snap, format, () =>
      this.cached(snap, format).then(async (b) => ({
        deflated: await deflateRaw(b, { level: DEFLATE_LEVEL, finishFlush: constants.Z_SYNC_FLUSH }),
        crc: crc32(b),
        size: b.length,
      })));
  }

  /** What a collection does ahead of the scrapes: the Prometheus text, plain and deflated (Prometheus asks for gzip). */
  async prepare(snap: Snapshot): Promise<void> {
    await this.cachedDeflated(snap, 'prometheus');
  }

  /** The whole body in the encoding asked for: the cached bytes as they are, then the live lines. */
  async body(snap: Snapshot, format: Format, encoding: Encoding): Promise<[Buffer, Buffer]> {
    const live = Buffer.from(this.live(snap, format));
    if (encoding === 'identity') return [await this.cached(snap, format), live];
    const c = await this.cachedDeflated(snap, format);
    return [Buffer.concat([GZIP_HEADER, c.deflated]), closingGzip(live, c.crc, c.size)];
  }

  /** The lines computed at serve time, in the format's syntax, ending the body. */
  live(snap: Snapshot, format: Format): string {
    const families: MetricFamily[] = [
      family('snapshot_age_seconds', 'gauge',
        'Age of the snapshot this scrape serves: seconds since its collection began. Collection runs every --collector.interval, not per scrape (0: per scrape).',
        [snap], (s) => ({ labels: {}, value: Math.max(0, (this.now() - s.takenAtMs) / 1000) })),
    ];
    const r = this.o.refresh;
    if (r) {
      families.push(
        family('snapshot_refresh_interval_seconds', 'gauge', 'Time between two collections (--collector.interval).',
          [r], (x) => ({ labels: {}, value: x.intervalSeconds })),
        family('snapshot_refresh_skipped_total', 'counter',
          'Collection ticks skipped because the previous collection was still running (it outlived --collector.interval).',
          [r], (x) => ({ labels: {}, value: x.skippedTicks() })),
      );
    }
    const text = serialize(families, format);
    // Prometheus text: a blank line separates these families from the cached ones.
    return format === 'openmetrics' ? text : `\n${text}`;
  }
}

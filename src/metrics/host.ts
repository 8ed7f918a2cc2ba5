// Families from sysfs/debugfs readings and their derivations.
import type { Snapshot } from '../snapshot/types.js';
import type { DeviceReading } from '../sources/types.js';
import { family, type MetricFamily } from './family.js';

const HCTX_TYPES = ['default', 'read', 'poll'] as const;

/** Eras in which a non-negative io_poll_delay no longer makes io_uring I/O sleep (docs/kernel.md §3.1). */
const HYBRID_INEFFECTIVE_ERAS = new Set(['blkmq_hybrid_sync_only', 'blkmq_hybrid_dead']);

export function hostFamilies(s: Snapshot): MetricFamily[] {
  const host = s.host;
  if (!host) return [];
  const devs = host.devices;
  const withPollStat = devs.flatMap((d) =>
    d.pollStat?.kind === 'buckets' ? d.pollStat.buckets.filter((b) => b.samples > 0).map((b) => ({ d, b })) : [],
  );
  const pollStatLabels = ({ d, b }: (typeof withPollStat)[number]) => ({ device: d.device, op: b.op, size_bytes: String(b.sizeBytes) });
  const ages = new Map(s.pollStatAges.map((a) => [`${a.device}/${a.op}/${a.sizeBytes}`, a.unchangedSinceMs]));
  const ns = (v: number | undefined) => (v === undefined ? undefined : v / 1e9);
  const optional = (d: DeviceReading, v: number | undefined) => (v === undefined ? undefined : { labels: { device: d.device }, value: v });

  return [
    family('kernel_era_info', 'gauge',
      'Kernel era of hybrid polling detected on this host (era label), with the evidence used: btf, debugfs or release_hint. Always 1.',
      [host.era], (e) => ({ labels: { era: e.era, evidence: e.evidence, release: host.features.release ?? '' }, value: 1 })),
    family('nvme_poll_queues_param', 'gauge',
      'nvme module parameter poll_queues: poll queues requested per controller (the controller may grant fewer). Absent when the nvme module is not loaded.',
      host.nvmePollQueues === undefined ? [] : [host.nvmePollQueues], (v) => ({ labels: {}, value: v })),
    family('device_info', 'gauge', 'Block device seen by the exporter, with its major:minor number. Always 1.',
      devs, (d) => ({ labels: { device: d.device, major_minor: d.devNum ?? '' }, value: 1 })),
    family('device_io_poll', 'gauge',
      'queue/io_poll: 1 if the queue can poll (has poll queues). A capability, not a sign that anything polls.',
      devs, (d) => optional(d, d.ioPoll)),
    family('device_io_poll_delay', 'gauge',
      'queue/io_poll_delay as read: -1 classic polling, 0 adaptive hybrid (half the mean), >0 fixed sleep in microseconds. Constant -1 from Linux 6.4.',
      devs, (d) => optional(d, d.ioPollDelay)),
    family('device_hybrid_configured_ineffective', 'gauge',
      'Is 1 when io_poll_delay asks for block-layer hybrid sleep but this kernel era never sleeps for io_uring (5.16-6.3): the setting does nothing.',
      devs.filter((d) => d.ioPollDelay !== undefined), (d) => ({
        labels: { device: d.device },
        value: d.ioPollDelay! >= 0 && HYBRID_INEFFECTIVE_ERAS.has(host.era.era) ? 1 : 0,
      })),
    family('device_hw_queues', 'gauge',
      'Hardware queues (hctx) of the device by type (default, read, poll), from debugfs hctx*/type. Polled I/O needs poll > 0.',
      devs.flatMap((d) => (d.hctxByType ? HCTX_TYPES.map((t) => ({ d, t, n: d.hctxByType![t] ?? 0 })) : [])),
      ({ d, t, n }) => ({ labels: { device: d.device, type: t }, value: n })),
    family('device_read_errors', 'gauge',
      'Files of this device that could not be read or parsed in this scrape (see the exporter log for which and why).',
      devs, (d) => ({ labels: { device: d.device }, value: d.errors.length })),
    family('poll_stat_samples', 'gauge',
      'debugfs poll_stat: completions in the last 100 ms window that had I/O of this direction and size class (Linux 4.12-6.3). Lines with no samples are not exported.',
      withPollStat, (x) => ({ labels: pollStatLabels(x), value: x.b.samples })),
    ...(['mean', 'min', 'max'] as const).map((k) =>
      family(`poll_stat_${k}_seconds`, 'gauge',
        `debugfs poll_stat: ${k} completion time (driver issue to completion, including any oversleep) of that window. Adaptive hybrid polling slept half the mean.`,
        withPollStat, (x) => {
          const v = ns(x.b[`${k}Ns`]);
          return v === undefined ? undefined : { labels: pollStatLabels(x), value: v };
        })),
    family('poll_stat_unchanged_seconds', 'gauge',
      'Seconds since this poll_stat line last changed. The kernel keeps the last window with I/O forever, so a large value means stale data, not current latency.',
      withPollStat, (x) => {
        const since = ages.get(`${x.d.device}/${x.b.op}/${x.b.sizeBytes}`);
        return since === undefined ? undefined : { labels: pollStatLabels(x), value: (s.takenAtMs - since) / 1000 };
      }),
    ...(['considered', 'invoked', 'success'] as const).map((k) =>
      family(`hctx_poll_${k}_total`, 'counter',
        {
          considered: 'debugfs hctx*/io_poll considered: classic poll loops entered on this hardware queue (Linux <=5.15). Kept monotonic across resets.',
          invoked: 'debugfs hctx*/io_poll invoked: driver ->poll() calls on this hardware queue (Linux <=5.15). Kept monotonic across resets.',
          success: 'debugfs hctx*/io_poll success: ->poll() calls that found a completion (Linux <=5.15). success/invoked is the poll hit ratio.',
        }[k],
        s.hctxTotals, (t) => ({ labels: { device: t.device, hctx: t.hctx }, value: t[k] }))),
    family('hctx_poll_resets_total', 'counter',
      'Times the kernel hctx io_poll counters went backwards (someone wrote to the file); the exported counters absorb them.',
      s.hctxTotals, (t) => ({ labels: { device: t.device, hctx: t.hctx }, value: t.resets })),
  ];
}

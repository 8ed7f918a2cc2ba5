// Several hpdrive processes side by side (each its own io_uring ring, pinned to its own vCPU) as
// one run: the exporter's figures of their shared device are compared with the pollers' sums.
// Pure.
import type { DriverResult } from './session.js';

const sum = (rs: DriverResult[], f: (d: DriverResult) => number) => rs.reduce((a, d) => a + f(d), 0);

/**
 * The processes' results as one: counts, CPU and switches summed, IOPS over the longest wall time,
 * latency figures weighted by I/Os (the percentiles so are approximate; no check reads them), the
 * empty-call cost weighted by calls. `cpus` is left out: each process's "beside it" holds the
 * others, so what ran beside the run is not known (and the lab does not repeat it for that).
 */
export function mergeDrivers(rs: DriverResult[]): DriverResult {
  if (rs.length === 0) throw new Error('mergeDrivers: no results');
  if (rs.length === 1) return rs[0]!;
  const first = rs[0]!;
  const ios = sum(rs, (d) => d.ios);
  const wall = Math.max(...rs.map((d) => d.wall_s));
  const byIos = (f: (d: DriverResult) => number) => (ios > 0 ? sum(rs, (d) => d.ios * f(d)) / ios : 0);
  const exec = sum(rs, (d) => d.cpu.exec_s);
  const calls = sum(rs, (d) => d.cpu.wait_calls);
  const lat = first.lat_us;
  return {
    ...first,
    pid: first.pid,
    ios,
    wall_s: wall,
    iops: wall > 0 ? ios / wall : 0,
    lat_us: Object.fromEntries(Object.keys(lat).map((k) => [k, byIos((d) => d.lat_us[k as keyof typeof lat])])) as DriverResult['lat_us'],
    cpu: {
      exec_s: exec,
      run_delay_s: sum(rs, (d) => d.cpu.run_delay_s),
      timeslices: sum(rs, (d) => d.cpu.timeslices),
      utime_s: sum(rs, (d) => d.cpu.utime_s),
      stime_s: sum(rs, (d) => d.cpu.stime_s),
      util: sum(rs, (d) => d.cpu.util),
      per_io_us: ios > 0 ? (exec / ios) * 1e6 : 0,
      wait_s: sum(rs, (d) => d.cpu.wait_s),
      wait_calls: calls,
      empty_enter_ns: calls > 0 ? sum(rs, (d) => d.cpu.wait_calls * d.cpu.empty_enter_ns) / calls : 0,
    },
    ctxsw: { voluntary: sum(rs, (d) => d.ctxsw.voluntary), involuntary: sum(rs, (d) => d.ctxsw.involuntary) },
    cpus: undefined,
    besideThreads: undefined,
    procs: rs,
  };
}

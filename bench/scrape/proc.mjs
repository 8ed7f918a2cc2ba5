// /proc readers shared by the scrape benchmarks: a process's CPU ticks and memory figures.
import { readFileSync } from 'node:fs';

/** utime + stime of a process, in clock ticks (USER_HZ, 100 on Linux) */
export function procStat(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { cpuTicks: Number(f[11]) + Number(f[12]) }; // utime, stime
}

/** A `/proc/PID/status` figure in KiB (VmRSS, VmHWM, …). */
export function memKiB(pid, key) {
  return Number(new RegExp(`${key}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
}

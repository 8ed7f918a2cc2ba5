// hpdrive: the VM lab's workload driver. Random O_DIRECT reads through raw io_uring syscalls
// (no liburing: the guest has none, and this builds static on the host), in three modes:
//   irq     interrupt-driven completions
//   poll    classic IOPOLL (IORING_SETUP_IOPOLL): the task spins for every completion
//   hybrid  hybrid IOPOLL (IOPOLL|HYBRID_IOPOLL, 6.13+): the kernel sleeps before it spins
// No fio release has a hybrid option, hence this program.
//
// Usage: hpdrive [-m irq|poll|hybrid] [-q depth] [-b bytes] [-t seconds | -n ios] [-s seed] [-c cpu] [-H] [-Q] [-R] DEVICE [DEVICE...]
// With several devices one ring polls them all (io_uring keeps one hybrid_poll_time per ring, the
// minimum over its devices): slot i of the queue always reads device i mod n, so at depth n each
// device has one read in flight; with -R each new read goes to the next device in turn instead
// (fio's file_service_type=roundrobin), whichever slot it refills. The per-device I/O counts are in
// the JSON line.
// Prints one JSON line on stdout: its own I/O count, IOPS, latency percentiles, and its CPU time
// from /proc/thread-self/schedstat (ns, what the scheduler charged) and /proc/self/stat (ticks),
// plus the CPU of the wait phase alone (CLOCK_THREAD_CPUTIME_ID around the waiting io_uring_enter),
// so the exporter's accounting can be checked against what the poller really spent polling. It
// also times empty io_uring_enter calls (no submission, no waiting) the same way, after every
// 16th waiting call, so they share the run's conditions: the syscall's entry and exit around the
// poll loop, which no poll-loop tracer sees.
// It also reads every CPU's task run time (/proc/schedstat, ns) around the measured phase: what
// ran beside it. Under icount all vCPUs advance one clock, so work elsewhere slows the poller:
// before the measured phase it waits (up to 0.5 s, reported as quiet_wait_s) for the other CPUs to go quiet.
// -Q: no wait for the other CPUs to go quiet (several hpdrive processes side by side, each its own
// ring: each would wait for the others' runs).
// -H (hold): after printing, keep the idle ring open until stdin reaches EOF, so that an observer
// can read the ring's per-ring state after the run without disturbing the run itself.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/fs.h>
#include <linux/io_uring.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef IORING_SETUP_HYBRID_IOPOLL
#define IORING_SETUP_HYBRID_IOPOLL (1U << 17) /* 6.13+; the host's headers may predate it */
#endif

struct ring {
  int fd;
  unsigned *sq_tail, *sq_mask, *sq_array;
  unsigned *cq_head, *cq_tail, *cq_mask;
  struct io_uring_sqe *sqes;
  struct io_uring_cqe *cqes;
};

#define MAX_CPUS 8
#define MAX_DEVS 8

struct cpu_sample {
  uint64_t exec_ns, run_delay_ns, slices; /* /proc/thread-self/schedstat */
  uint64_t utime_ticks, stime_ticks;      /* /proc/self/stat fields 14, 15 */
  long nvcsw, nivcsw;                     /* getrusage */
  uint64_t cpu_task_ns[MAX_CPUS];         /* /proc/schedstat: per CPU, time tasks ran there */
  int ncpus, on_cpu;
};

static void fail(const char *what, int err) {
  printf("{\"error\":\"%s: %s\"}\n", what, strerror(err));
  exit(1);
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/** Every CPU's task run time: "cpuN a b c d e f rq_cpu_time …" in /proc/schedstat, the 7th value (ns). */
static void read_cpu_tasks(struct cpu_sample *s) {
  FILE *f = fopen("/proc/schedstat", "r");
  if (!f) fail("open /proc/schedstat", errno);
  char line[512];
  while (fgets(line, sizeof line, f)) {
    int cpu;
    unsigned long long t;
    if (sscanf(line, "cpu%d %*u %*u %*u %*u %*u %*u %llu", &cpu, &t) == 2 && cpu >= 0 && cpu < MAX_CPUS) {
      s->cpu_task_ns[cpu] = t;
      if (cpu + 1 > s->ncpus) s->ncpus = cpu + 1;
    }
  }
  fclose(f);
}

static void cpu_sample(struct cpu_sample *s) {
  memset(s, 0, sizeof *s);
  FILE *f = fopen("/proc/thread-self/schedstat", "r");
  if (!f || fscanf(f, "%lu %lu %lu", &s->exec_ns, &s->run_delay_ns, &s->slices) != 3) fail("read schedstat", errno ? errno : EINVAL);
  fclose(f);
  char buf[1024];
  f = fopen("/proc/self/stat", "r");
  size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
  if (!f || n == 0) fail("read /proc/self/stat", errno ? errno : EINVAL);
  fclose(f);
  buf[n] = 0;
  // comm may hold spaces and parentheses: fields start after the last ')'. utime, stime are 14, 15.
  char *p = strrchr(buf, ')');
  if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &s->utime_ticks, &s->stime_ticks) != 2)
    fail("parse /proc/self/stat", EINVAL);
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  s->nvcsw = ru.ru_nvcsw;
  s->nivcsw = ru.ru_nivcsw;
  read_cpu_tasks(s);
  s->on_cpu = sched_getcpu();
}

/** Task run time (ns) on every CPU but `self` (/proc/schedstat). */
static uint64_t others_task_ns(int self) {
  struct cpu_sample s = {0};
  read_cpu_tasks(&s);
  uint64_t t = 0;
  for (int c = 0; c < s.ncpus; c++)
    if (c != self) t += s.cpu_task_ns[c];
  return t;
}

/**
 * Sleeps in 1 ms steps until tasks ran under QUIET_SHARE of a step on the other CPUs, QUIET_STEPS
 * steps running, or for QUIET_MAX_NS at most; returns how long it waited.
 */
enum { QUIET_STEPS = 3 };
#define QUIET_SHARE 0.01
#define QUIET_MAX_NS 500000000ULL
static uint64_t quiet_wait(void) {
  const struct timespec step = {0, 1000 * 1000};
  int self = sched_getcpu();
  uint64_t t0 = now_ns(), prev = others_task_ns(self);
  for (int quiet = 0; quiet < QUIET_STEPS && now_ns() - t0 < QUIET_MAX_NS;) {
    uint64_t s0 = now_ns();
    nanosleep(&step, NULL);
    uint64_t cur = others_task_ns(self);
    quiet = (double)(cur - prev) < QUIET_SHARE * (double)(now_ns() - s0) ? quiet + 1 : 0;
    prev = cur;
  }
  return now_ns() - t0;
}

static uint64_t thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int enter(int fd, unsigned submit, unsigned wait) {
  int r;
  do r = (int)syscall(__NR_io_uring_enter, fd, submit, wait, wait ? IORING_ENTER_GETEVENTS : 0, NULL, 0);
  while (r < 0 && errno == EINTR);
  return r;
}

static void ring_setup(struct ring *r, unsigned depth, unsigned flags) {
  struct io_uring_params p;
  memset(&p, 0, sizeof p);
  p.flags = flags;
  r->fd = (int)syscall(__NR_io_uring_setup, depth, &p);
  if (r->fd < 0) {
    printf("{\"error\":\"io_uring_setup(flags=0x%x): %s\",\"flags\":%u}\n", flags, strerror(errno), flags);
    exit(3); /* 3: this kernel lacks the mode (e.g. hybrid before 6.13) */
  }
  size_t sqsz = p.sq_off.array + p.sq_entries * sizeof(unsigned);
  size_t cqsz = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
  char *sq = mmap(0, sqsz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQ_RING);
  char *cq = mmap(0, cqsz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_CQ_RING);
  r->sqes = mmap(0, p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd,
                 IORING_OFF_SQES);
  if (sq == MAP_FAILED || cq == MAP_FAILED || r->sqes == MAP_FAILED) fail("mmap ring", errno);
  r->sq_tail = (unsigned *)(sq + p.sq_off.tail);
  r->sq_mask = (unsigned *)(sq + p.sq_off.ring_mask);
  r->sq_array = (unsigned *)(sq + p.sq_off.array);
  r->cq_head = (unsigned *)(cq + p.cq_off.head);
  r->cq_tail = (unsigned *)(cq + p.cq_off.tail);
  r->cq_mask = (unsigned *)(cq + p.cq_off.ring_mask);
  r->cqes = (struct io_uring_cqe *)(cq + p.cq_off.cqes);
}

static uint64_t rng = 88172645463325252ull;
static uint64_t xorshift(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

/* Queue a read of slot `slot` at a random bs-aligned offset. */
static void queue_read(struct ring *r, int fd, void *buf, unsigned bs, uint64_t nblk, unsigned slot) {
  unsigned tail = *r->sq_tail, idx = tail & *r->sq_mask;
  struct io_uring_sqe *e = &r->sqes[idx];
  memset(e, 0, sizeof *e);
  e->opcode = IORING_OP_READ;
  e->fd = fd;
  e->addr = (uint64_t)(uintptr_t)buf;
  e->len = bs;
  e->off = (xorshift() % nblk) * bs;
  e->user_data = slot;
  r->sq_array[idx] = idx;
  __atomic_store_n(r->sq_tail, tail + 1, __ATOMIC_RELEASE);
}

static int cmpu64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static double pct_us(const uint64_t *v, size_t n, double q) {
  if (!n) return 0;
  size_t i = (size_t)(q * (double)(n - 1) + 0.5);
  return (double)v[i] / 1e3;
}

static void usage(const char *argv0) {
  fprintf(stderr, "usage: %s [-m irq|poll|hybrid] [-q depth] [-b bytes] [-t seconds | -n ios] [-s seed] [-c cpu] [-H] [-Q] [-R] DEVICE [DEVICE...]\n", argv0);
  exit(2);
}

int main(int argc, char **argv) {
  const char *mode = "poll";
  unsigned depth = 1, bs = 4096;
  double secs = 5;
  uint64_t max_ios = 0;
  int c, hold = 0, no_quiet = 0, round_robin = 0;
  while ((c = getopt(argc, argv, "m:q:b:t:n:s:c:HQR")) != -1) {
    switch (c) {
      case 'm': mode = optarg; break;
      case 'q': depth = (unsigned)strtoul(optarg, NULL, 10); break;
      case 'b': bs = (unsigned)strtoul(optarg, NULL, 10); break;
      case 't': secs = atof(optarg); break;
      case 'n': max_ios = strtoull(optarg, NULL, 10); break;
      case 's': rng = strtoull(optarg, NULL, 10) | 1; break;
      case 'H': hold = 1; break;
      case 'Q': no_quiet = 1; break;
      case 'R': round_robin = 1; break;
      case 'c': {
        // Pinned, as pollers are: a migration mid-run parks the poller behind the other vCPU's work.
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(atoi(optarg), &set);
        if (sched_setaffinity(0, sizeof set, &set) < 0) fail("sched_setaffinity", errno);
        break;
      }
      default: usage(argv[0]);
    }
  }
  int ndev = argc - optind;
  if (ndev < 1 || ndev > MAX_DEVS || depth < 1 || depth > 4096 || bs < 512 || bs % 512 || (secs <= 0 && !max_ios)) usage(argv[0]);
  unsigned flags;
  if (!strcmp(mode, "irq")) flags = 0;
  else if (!strcmp(mode, "poll")) flags = IORING_SETUP_IOPOLL;
  else if (!strcmp(mode, "hybrid")) flags = IORING_SETUP_IOPOLL | IORING_SETUP_HYBRID_IOPOLL;
  else usage(argv[0]);

  int fds[MAX_DEVS];
  uint64_t nblks[MAX_DEVS], dev_ios[MAX_DEVS] = {0};
  char devs[MAX_DEVS * 64] = "";
  for (int i = 0; i < ndev; i++) {
    const char *dev = argv[optind + i];
    int fd = open(dev, O_RDONLY | O_DIRECT);
    if (fd < 0) fail("open device", errno);
    uint64_t devsz = 0;
    if (ioctl(fd, BLKGETSIZE64, &devsz) < 0) {
      struct stat st;
      if (fstat(fd, &st) < 0) fail("fstat", errno);
      devsz = (uint64_t)st.st_size;
    }
    nblks[i] = devsz / bs;
    if (!nblks[i]) fail("device smaller than one block", EINVAL);
    fds[i] = fd;
    snprintf(devs + strlen(devs), sizeof devs - strlen(devs), "%s%s", i ? "," : "", dev);
  }
  // each slot's device: fixed (slot i reads device i mod n), or with -R the next in turn at every read
  unsigned *slot_dev = calloc(depth, sizeof *slot_dev), next_dev = 0;
  if (!slot_dev) fail("calloc", ENOMEM);
#define SLOT_DEV(slot) (slot_dev[slot])
#define PICK_DEV(slot) (slot_dev[slot] = round_robin ? next_dev++ % (unsigned)ndev : (slot) % (unsigned)ndev)

  struct ring r;
  ring_setup(&r, depth, flags);
  char *bufs;
  if (posix_memalign((void **)&bufs, 4096, (size_t)depth * bs)) fail("posix_memalign", ENOMEM);
  uint64_t *issued = calloc(depth, sizeof *issued);
  size_t cap = 1 << 16, n = 0;
  uint64_t *lat = malloc(cap * sizeof *lat);
  if (!issued || !lat) fail("malloc", ENOMEM);

  // The syscall around the poll loop, timed exactly as the waiting calls are timed (below).
  enum { EMPTY_EVERY = 16 };
  uint64_t empty_cpu = 0, empty_calls = 0;

  // Let the request that started us settle first (the agent's HTTP reply, its virtio-net
  // interrupts): io_uring's hybrid sleep is fixed by the ring's first two I/Os, so an interrupt
  // landing on one of them changes the sleep of the whole run. Then wait for the other CPUs to go
  // quiet: work left there (the agent's Node threads, a BPF detach's RCU work, ksoftirqd) would run
  // beside the run, and under icount it slows the poller's clock (the lab repeats such a run).
  // Both waits are free in virtual time (idle is skipped).
  struct timespec settle = {0, 20 * 1000 * 1000};
  nanosleep(&settle, NULL);
  uint64_t quiet_ns = no_quiet ? 0 : quiet_wait();

  struct cpu_sample c0, c1;
  cpu_sample(&c0);
  uint64_t t0 = now_ns(), tend = t0 + (uint64_t)(secs * 1e9), sum = 0, maxlat = 0, wait_cpu = 0, wait_calls = 0;
  unsigned inflight = 0, to_submit = 0;
  int stopping = 0;
  for (unsigned s = 0; s < depth; s++) {
    PICK_DEV(s);
    queue_read(&r, fds[SLOT_DEV(s)], bufs + (size_t)s * bs, bs, nblks[SLOT_DEV(s)], s);
    issued[s] = now_ns();
    to_submit++;
  }
  // Submission and waiting are separate syscalls, so the CPU of the wait phase (where IOPOLL polls,
  // hybrid sleeps and spins) is measured on its own: what an observer of polling should account for.
  while (to_submit || inflight) {
    if (to_submit) {
      int ret = enter(r.fd, to_submit, 0);
      if (ret < 0) fail("io_uring_enter(submit)", errno);
      inflight += (unsigned)ret;
      to_submit -= (unsigned)ret;
    }
    uint64_t w0 = thread_cpu_ns();
    if (enter(r.fd, 0, 1) < 0) fail("io_uring_enter(wait)", errno);
    wait_cpu += thread_cpu_ns() - w0;
    if (++wait_calls % EMPTY_EVERY == 0) {
      uint64_t e0 = thread_cpu_ns();
      if (enter(r.fd, 0, 0) < 0) fail("io_uring_enter(empty)", errno);
      empty_cpu += thread_cpu_ns() - e0;
      empty_calls++;
    }
    unsigned h = *r.cq_head, t = __atomic_load_n(r.cq_tail, __ATOMIC_ACQUIRE);
    uint64_t now = now_ns();
    for (; h != t; h++) {
      struct io_uring_cqe *cqe = &r.cqes[h & *r.cq_mask];
      unsigned slot = (unsigned)cqe->user_data;
      if (cqe->res != (int)bs) {
        printf("{\"error\":\"read failed: res=%d (%s)\"}\n", cqe->res, cqe->res < 0 ? strerror(-cqe->res) : "short read");
        return 1;
      }
      inflight--;
      dev_ios[SLOT_DEV(slot)]++;
      uint64_t d = now - issued[slot];
      sum += d;
      if (d > maxlat) maxlat = d;
      if (n == cap) {
        cap *= 2;
        lat = realloc(lat, cap * sizeof *lat);
        if (!lat) fail("realloc", ENOMEM);
      }
      lat[n++] = d;
      // Once time or the I/O budget is up, let the in-flight reads drain: every I/O the kernel
      // completed is counted here, so the exporter's count over the run can be compared exactly.
      if (!stopping && ((max_ios && n + inflight + to_submit >= max_ios) || (!max_ios && now >= tend))) stopping = 1;
      if (!stopping) {
        PICK_DEV(slot);
        queue_read(&r, fds[SLOT_DEV(slot)], bufs + (size_t)slot * bs, bs, nblks[SLOT_DEV(slot)], slot);
        issued[slot] = now_ns();
        to_submit++;
      }
    }
    __atomic_store_n(r.cq_head, h, __ATOMIC_RELEASE);
  }
  uint64_t wall = now_ns() - t0;
  cpu_sample(&c1);

  qsort(lat, n, sizeof *lat, cmpu64);
  long tck = sysconf(_SC_CLK_TCK);
  char per_cpu[MAX_CPUS * 24] = "";
  for (int c = 0; c < c1.ncpus; c++)
    snprintf(per_cpu + strlen(per_cpu), sizeof per_cpu - strlen(per_cpu), "%s%.6f", c ? "," : "",
             (double)(c1.cpu_task_ns[c] - c0.cpu_task_ns[c]) / 1e9);
  char per_dev[MAX_DEVS * 24] = "";
  for (int i = 0; i < ndev; i++)
    snprintf(per_dev + strlen(per_dev), sizeof per_dev - strlen(per_dev), "%s%lu", i ? "," : "", (unsigned long)dev_ios[i]);
  double ws = (double)wall / 1e9;
  uint64_t exec = c1.exec_ns - c0.exec_ns;
  printf("{\"mode\":\"%s\",\"flags\":%u,\"qd\":%u,\"bs\":%u,\"device\":\"%s\",\"pid\":%d,"
         "\"ios\":%zu,\"device_ios\":[%s],\"wall_s\":%.6f,\"iops\":%.1f,"
         "\"lat_us\":{\"mean\":%.3f,\"p50\":%.3f,\"p90\":%.3f,\"p99\":%.3f,\"p999\":%.3f,\"max\":%.3f},"
         "\"cpu\":{\"exec_s\":%.6f,\"run_delay_s\":%.6f,\"timeslices\":%lu,\"utime_s\":%.3f,\"stime_s\":%.3f,"
         "\"util\":%.4f,\"per_io_us\":%.4f,\"wait_s\":%.6f,\"wait_calls\":%lu,\"empty_enter_ns\":%.1f},"
         "\"ctxsw\":{\"voluntary\":%ld,\"involuntary\":%ld},\"cpus\":{\"on\":[%d,%d],\"task_s\":[%s],\"quiet_wait_s\":%.6f}}\n",
         mode, flags, depth, bs, devs, (int)getpid(), n, per_dev, ws, (double)n / ws,
         n ? (double)sum / (double)n / 1e3 : 0, pct_us(lat, n, 0.5), pct_us(lat, n, 0.9), pct_us(lat, n, 0.99),
         pct_us(lat, n, 0.999), (double)maxlat / 1e3, (double)exec / 1e9, (double)(c1.run_delay_ns - c0.run_delay_ns) / 1e9,
         c1.slices - c0.slices, (double)(c1.utime_ticks - c0.utime_ticks) / (double)tck,
         (double)(c1.stime_ticks - c0.stime_ticks) / (double)tck, (double)exec / (double)wall,
         n ? (double)exec / (double)n / 1e3 : 0, (double)wait_cpu / 1e9, wait_calls, empty_calls ? (double)empty_cpu / (double)empty_calls : 0.0, c1.nvcsw - c0.nvcsw, c1.nivcsw - c0.nivcsw,
         c0.on_cpu, c1.on_cpu, per_cpu, (double)quiet_ns / 1e9);
  fflush(stdout);
  if (hold) {
    char b[64];
    while (read(0, b, sizeof b) > 0) {}
  }
  close(r.fd);
  for (int i = 0; i < ndev; i++) close(fds[i]);
  return 0;
}

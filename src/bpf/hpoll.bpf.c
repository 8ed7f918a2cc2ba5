// SPDX-License-Identifier: GPL-2.0
/*
 * hpoll.bpf.c: per-device block latency and hybrid-poll sleep/wake/spin histograms, CO-RE.
 * See README.md in this directory for the design; hpoll.h for the maps' value layouts.
 *
 * Every program exists once per attach method so that the loader can load and attach each on its
 * own: tp_btf (typed pointers, direct loads) with a raw_tp twin (probe reads) for kernels that
 * refuse tp_btf, and fentry/fexit for the exact poll path. The loader picks one variant per
 * logical program and disables the others before load.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "hpoll.h"

char LICENSE[] SEC("license") = "GPL";

/* ----------------------------------------------------------------- configuration (rodata) */

/* the fentry/fexit poll path is loaded; otherwise sleeps are recognised by per-task state */
const volatile bool fentry_path = false;
/* block_rq_issue has (q, rq) before 5.11 and (rq) since: the loader reads the tracepoint's BTF */
const volatile bool issue_arg1 = false;
/* test mode: timed sleeps of this process count as hybrid sleeps and are accounted at
 * switch-in under device 0:0 (a nanosleeping task stands in for the poller) */
const volatile __u32 test_tgid = 0;
/* calibrated found_slept threshold: this percentage of the shortest observed found time */
const volatile __u32 calib_pct = 200;
/* per-task polled-in-flight state older than this is stale (completion in another task) */
const volatile __u64 stale_ns = 1000000000ULL;

/* ------------------------------------------------------------ gates (.bss, read with one load) */

/* tasks that have per-task state: 0 means no poller exists and hrtimer_start returns at once */
__u64 polled_tasks = 0;
/* tasks with a sleep between hrtimer_start and switch-in: gates sched_switch/sched_wakeup */
__u64 sleepers = 0;
/* tracepoint path: tasks with a busy window open (polled I/O in flight): gates sched_switch too */
__u64 busy_tasks = 0;
/* tasks whose state is in task_spill (its slot in `tasks` held by another): 0, no spill lookup */
__u64 spilled = 0;

/* Sampling (--sample, the exporter's --bpf.sample): the latency of 1 in sample_n completions is
 * timed and added with weight sample_n; the others only count. Its own section (.data), away from
 * the gates other CPUs write: it is read by every completion. The loader changes it at run time. */
__u32 sample_n SEC(".data") = 1;

/* a gap between poll loops longer than this is the application being idle, not a cost of polling */
#define GAP_MAX_NS 10000000ULL

/* address of hrtimer_wakeup, the callback of every hrtimer_sleeper (resolved from kallsyms) */
extern const void hrtimer_wakeup __ksym __weak;

/* ------------------------------------------------------------------------------------- maps */

/* issue time per request, only for requests the kernel does not timestamp (start_time_ns == 0) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, u64);
	__type(value, u64);
} starts SEC(".maps");

/* Shared by all CPUs, updated with atomic adds: these kinds change once per sleep or poll call,
 * not per I/O, and a per-CPU copy of 1.2 KB per series would grow with the number of CPUs.
 * Preallocated, because creating an element must not fail inside the scheduler. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct hist_key);
	__type(value, struct hist);
} hists SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, HP_RQ_SLOTS);
	__type(key, u32);
	__type(value, struct rq_slot);
} rq_slots SEC(".maps");

/* all-zero value to create hists entries from (too large for the BPF stack) */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct hist);
} zero_hist SEC(".maps");

/* Per polled device: all its series in one value (hpoll.h), atomic adds as in `hists`; the
 * fentry path's records and the tracepoint path's per-completion ones. Preallocated: 64 devices x
 * 11.8 KB; a device beyond them uses `hists`. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, u32);
	__type(value, struct dev_hists);
} fdev SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct dev_hists);
} zero_fdev SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 256);
	__type(key, u32);
	__type(value, struct dev_ctr);
} dev_ctrs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, u32);
	__type(value, struct dev_calib);
} calib SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, u64);
	__type(value, struct ring_st);
} rings SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, C_MAX);
	__type(key, u32);
	__type(value, u64);
} counters SEC(".maps");

/* Per-task poll state, keyed by tid. Created at the first polled issue, the first io_do_iopoll
 * (fentry path) or the first test sleep; cleared at task exit. */
struct task_st {
	u32 tid;          /* the task it belongs to (0: a free slot of `tasks`) */
	u64 t_sleep;      /* hrtimer_start of a hybrid sleep not yet accounted (0: none) */
	u64 req_sleep;    /* its requested length: hrtimer expiry - t_sleep */
	u64 t_off;        /* switched out after arming */
	u64 t_wake;       /* sched_wakeup */
	u64 t_on;         /* switched back in */
	u64 t_polled;     /* last polled issue (both paths) or completion in this task (tracepoint) */
	u64 t_loop;       /* fentry: entry of the first io_do_iopoll pass of this poll loop (0: none) */
	u64 loop_woke;    /* fentry: last wake-up inside the loop (switch-in, or sleep start) */
	u64 t_found;      /* fentry: first classic_poll that found a completion after loop_woke */
	u64 t_cp;         /* fentry: io_uring_classic_poll entry */
	u64 t_woke;       /* fentry: wake-up of the slept request (switch-in, or sleep start) */
	u64 slept_req;    /* fentry: io_kiocb that slept and is not yet found */
	u64 issued;       /* fentry: its req->iopoll_start, read before it can complete */
	u32 inflight;     /* polled requests issued in this task, not yet completed here */
	/* tracepoint path, the busy window: from the polled issue that finds nothing in flight to the
	 * completion that leaves nothing in flight. Its on-CPU time is the poller's polling CPU. */
	u64 t_busy;       /* window open since (0: closed; counted in `busy_tasks` while open) */
	u64 t_run;        /* on CPU in the window since (0: off CPU) */
	u64 busy_cpu;     /* on-CPU ns of the window up to t_run, not yet recorded */
	u64 cpu_woke;     /* busy_cpu at the last wake-up (switch-in, or sleep start); 0: none since the last record */
	u64 busy_off;     /* off-CPU ns of the window's hybrid sleeps (switch-out -> switch-in), not yet recorded */
	u32 dev;          /* device of the last polled request (tracepoint) or classic_poll (fentry) */
	u32 polls;        /* fentry: classic_poll calls on slept_req since its sleep */
	u32 pass_sleeps;  /* fentry: sleeps in the current pass */
	u8 gated;         /* counted in `sleepers` */
	u8 test;          /* test-mode task */
	u8 in_pass;       /* fentry: inside io_do_iopoll */
	u8 in_cp;         /* fentry: inside io_uring_classic_poll */
	u8 pass_multi;    /* fentry: bit 0, this pass polled requests of two devices (dev_ctr.shared_polls); bit 1, the previous pass did */
	u32 pass_dev;     /* fentry: the device of the pass's first poll call */
	u8 first_pass;    /* fentry: this pass is its loop's first */
	u8 pass_calls;    /* fentry: poll calls in this pass so far (saturating) */
	u8 wait_open;     /* tracepoint: a polled issue since the last depth sample (on_complete) */
	u64 t_end;        /* fentry: end of the last poll loop (0: none since the next loop started) */
	u64 t_cpf;        /* fentry: exit of the last classic_poll in this pass that found completions */
	u32 end_k;        /* fentry: completions that loop reaped */
	/* fentry: what a poll loop measured from its completion on, recorded at the task's next
	 * loop start (hp_iopoll_in), next sleep or exit. The exits of classic_poll and io_do_iopoll
	 * run between a completion and the next issue, where a device-bound loop waits for every
	 * instruction (its sleep and spin before the completion absorb the rest): there the programs
	 * only store. The next loop starts while the device serves the next I/O. */
	u8 pend;          /* PEND_*: what is pending */
	u8 p_exact;       /* FOUND: classified by counting polls (else against the calibration) */
	u8 p_through;     /* FOUND, exact: slept through */
	u32 p_dev;        /* LOOP: device of the loop's last classic_poll */
	u32 p_reaped;     /* LOOP: completions its pass reaped after the finding poll (0: none) */
	u32 p_found_dev;  /* FOUND: device of the slept request */
	u32 p_found_k;    /* FOUND: completions its finding call found */
	u32 p_min_dev;    /* MIN: device of p_min_ns */
	u32 p_sleep_dev;  /* SLEEP: device the sleep is accounted under */
	u64 p_loop;       /* LOOP: the loop's wall time */
	u64 p_spin;       /* LOOP: its on-CPU time after the last wake-up */
	u64 p_woke_found; /* LOOP with WOKE: wake-up -> completion found */
	u64 p_reap_ns;    /* LOOP: the finding poll's exit -> the pass's exit */
	u64 p_min_ns;     /* MIN: shortest call of the loop that found a completion after a wake-up */
	u64 p_min_io_ns;  /* MIN: shortest call per completion of those that found 2+ (0: none) */
	u64 p_found;      /* FOUND: issue -> found (0: issue unknown) */
	u64 p_issued;     /* FOUND: its issue */
	u64 p_woke;       /* FOUND: its wake-up */
	u64 p_call_ns;    /* FOUND: the finding call's length */
	u64 p_wake_call;  /* FOUND: switch-in -> that call's entry */
	u64 p_sleep;      /* SLEEP: its start (t_sleep, cleared when the sleep met its request) */
	u64 p_origin;     /* SLEEP: the slept I/O's issue */
	u64 p_hpt;        /* SLEEP: ctx->hybrid_poll_time at the classic_poll after it */
	u64 p_loop_off;   /* SLEEP: the slept I/O's issue -> its loop's start (0: not known) */
	u64 p_pl_ns;      /* PLOOK: loop start -> end of its first finding call, which found p_pl_k */
	u32 p_pl_k;
	u32 p_pl_j;       /* PLOOK: the oneshot calls before it that found nothing */
	u32 p_pl_dev;     /* PLOOK: that call's device */
	u64 r_key;        /* ring of the task's passes not yet in `rings` */
	u64 r_hpt;        /* its hybrid_poll_time after the last of them */
	u32 r_passes;
	u32 r_sleeps;
	/* the same for ring_st's loop figures (pend_loop, pend_sleep, hp_iopoll_out) */
	u32 r_reaped;
	u32 r_loops;
	u64 r_loop_ns;
	u64 r_spin_ns;
	u64 r_off_ns;
	u64 r_wlat_ns;
};

#define PEND_LOOP  1  /* a loop ended */
#define PEND_WOKE  2  /* ... after a wake-up */
#define PEND_MIN   4  /* a call found completions after a wake-up */
#define PEND_FOUND 8  /* a slept request was found */
#define PEND_SLEEP 16 /* a sleep met its request */
#define PEND_PLOOK 32 /* a loop without a sleep found completions in its first pass of oneshot calls */

/*
 * Task state, direct-mapped by tid: slot tid % HP_TASK_SLOTS holds the task whose tid it names.
 * Every hybrid I/O looks up its poller's state five or six times (issue, sleep, both switches,
 * wake-up, completion) and every context switch looks up both tasks while one sleeps: an array
 * lookup is a few inlined instructions where a hash lookup hashes, walks a bucket and compares
 * keys. Tasks that poll are few, so two whose tids share a slot are rare; the second goes to
 * task_spill, looked up only while `spilled` is non-zero.
 */
/* the loader's --task-slots sets the map's size and this mask (hpoll.h: HP_TASK_SLOTS by default) */
const volatile __u32 task_mask = HP_TASK_SLOTS - 1;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, HP_TASK_SLOTS);
	__type(key, u32);
	__type(value, struct task_st);
} tasks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, u32);
	__type(value, struct task_st);
} task_spill SEC(".maps");

/* ---------------------------------------------------------------------------------- helpers */

/* p->f as a direct load for BTF pointers (tp_btf, fentry), as a probe read for raw_tp */
#define RD(btf, p, f) ((btf) ? (p)->f : BPF_CORE_READ((p), f))

static __always_inline void ctr_inc(u32 c)
{
	u64 *v = bpf_map_lookup_elem(&counters, &c);

	if (v)
		(*v)++;
}

static __always_inline u32 log2_u64(u64 v)
{
	u32 r, shift;

	r = (v > 0xFFFFFFFFULL) << 5; v >>= r;
	shift = (v > 0xFFFF) << 4; v >>= shift; r |= shift;
	shift = (v > 0xFF) << 3; v >>= shift; r |= shift;
	shift = (v > 0xF) << 2; v >>= shift; r |= shift;
	shift = (v > 0x3) << 1; v >>= shift; r |= shift;
	r |= (v >> 1);
	return r;
}

/* bucket index on the grid of hpoll.h / src/model/buckets.ts (branch-free log2, no loops) */
static __always_inline u64 bucket_of(u64 v)
{
	u64 u, e, idx;

	if (v <= 4)
		return v;
	u = v - 1;
	e = log2_u64(u);
	idx = 1 + 4 * (e - 1) + ((u >> (e - 2)) & 3);
	return idx < HP_NB - 1 ? idx : HP_NB - 1;
}

static __always_inline struct hist *hist_get(u32 dev, u32 kind)
{
	struct hist_key k = { .dev = dev, .kind = kind };
	struct hist *h;
	u32 z = 0;

	h = bpf_map_lookup_elem(&hists, &k);
	if (h)
		return h;
	h = bpf_map_lookup_elem(&zero_hist, &z);
	if (!h)
		return NULL;
	bpf_map_update_elem(&hists, &k, h, BPF_NOEXIST);
	h = bpf_map_lookup_elem(&hists, &k);
	if (!h)
		ctr_inc(C_HIST_FULL);
	return h;
}

/* one sample into a shared histogram (atomic adds: several CPUs may update one series) */
static __always_inline struct hist *hist_put(struct hist *h, u64 v)
{
	u64 idx;

	if (!h)
		return NULL;
	idx = bucket_of(v);
	barrier_var(idx); /* clang 14 would bound-check a copy and index with the original */
	if (idx >= HP_NB)
		return h;
	__sync_fetch_and_add(&h->slots[idx], 1);
	__sync_fetch_and_add(&h->sum, v);
	return h;
}

static __always_inline struct hist *hist_add(u32 dev, u32 kind, u64 v)
{
	return hist_put(hist_get(dev, kind), v);
}

/* 1 in sample_n requests is timed, chosen by a hash of its start_time_ns and tag: both are fixed
 * before issue, so the choice needs no state and no lookup, and it is independent of the latency
 * it selects (requests of one plug share start_time_ns; their tags tell them apart). */
static __always_inline u32 rq_weight(struct request *rq, u64 ts, const bool btf)
{
	u32 n = sample_n;
	u64 x;

	if (n <= 1)
		return 1;
	x = (ts ^ ((u64)(u32)RD(btf, rq, tag) << 32)) * 0x9E3779B97F4A7C15ULL;
	/* the hash's top 32 bits scaled to [0, n) (a multiply, not a division): 0 in 1 of n */
	return ((x >> 32) * n) >> 32 ? 0 : n;
}

/* dev's slot in this CPU's rq_slots: the first of HP_RQ_PROBES slots from its hash that holds it
 * or is free (claimed then); NULL when all are taken by other devices. Probing, because devices
 * collide in 32 slots more often than not (the bench's loop1 and vda share one) and a collision
 * sent every completion of one of them to the shared hash with atomic adds. */
static __always_inline struct rq_slot *rq_slot_of(u32 dev)
{
	u32 h = hp_rq_slot(dev);

#pragma unroll
	for (u32 i = 0; i < HP_RQ_PROBES; i++) {
		u32 k = (h + i) & (HP_RQ_SLOTS - 1);
		struct rq_slot *s = bpf_map_lookup_elem(&rq_slots, &k);

		if (!s)
			return NULL;
		if (s->dev == dev)
			return s;
		if (!s->dev) {
			s->dev = dev;
			return s;
		}
	}
	return NULL;
}

/* One completion at `now` into rq_lat. The hot path: dev's slot s in this CPU's array
 * (rq_slot_of), plain increments (block tracepoints run with preemption off, and one CPU's
 * programs do not interleave). The slot counts every completion (ios, bytes, errors: exact); a
 * sampled one (weight w > 0) adds w to its bucket and w x latency to the sum, so the histogram
 * estimates every completion whatever the rate was when it completed. Only when the device found
 * no slot (s NULL), the shared map with atomic adds, every completion timed (weight 1: its count
 * is the exact one). `now` is read by the caller where it is needed: w > 0, no slot, or the poll
 * path's records. */
static __always_inline void rq_lat_add(struct rq_slot *s, u32 dev, u64 ts, u64 now, u32 w,
				       unsigned int bytes, int error, bool polled)
{
	u64 v = now > ts ? now - ts : 0, idx;
	struct hist *h;

	if (s) {
		s->ios++;
		/* a polled completion is counted here too, in the line just written: no dev_ctrs lookup
		 * between the completion and the next issue */
		if (polled)
			s->polled++;
		s->h.aux0 += bytes;
		if (error)
			s->h.aux1++;
		if (!w)
			return;
		idx = bucket_of(v);
		barrier_var(idx);
		if (idx >= HP_NB)
			return;
		s->h.slots[idx] += w;
		s->h.sum += v * w;
		return;
	}
	idx = bucket_of(v);
	barrier_var(idx);
	if (idx >= HP_NB)
		return;
	h = hist_get(dev, HK_RQ_LAT);
	if (!h)
		return;
	__sync_fetch_and_add(&h->slots[idx], 1);
	__sync_fetch_and_add(&h->sum, v);
	__sync_fetch_and_add(&h->aux0, bytes);
	if (error)
		__sync_fetch_and_add(&h->aux1, 1);
}

/* a new device's counters: from .bss, not the stack (the struct is large for a 512-byte stack) */
static struct dev_ctr dev_ctr_zero;

static __always_inline struct dev_ctr *dev_ctr_get(u32 dev)
{
	struct dev_ctr *c = bpf_map_lookup_elem(&dev_ctrs, &dev);

	if (c)
		return c;
	bpf_map_update_elem(&dev_ctrs, &dev, &dev_ctr_zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(&dev_ctrs, &dev);
}

static __always_inline struct dev_calib *calib_get(u32 dev)
{
	struct dev_calib *c = bpf_map_lookup_elem(&calib, &dev);
	struct dev_calib zero = {};

	if (c)
		return c;
	bpf_map_update_elem(&calib, &dev, &zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(&calib, &dev);
}

/* dev's calibration: in its `fdev` block d (no lookup), else in the `calib` map */
static __always_inline struct dev_calib *calib_of(struct dev_hists *d, u32 dev)
{
	return d ? &d->cal : calib_get(dev);
}

/* a new task's state: from .bss, not the stack (the struct is a large part of 512 bytes) */
static struct task_st task_zero;

/* tid's slot in `tasks`, whoever holds it */
static __always_inline struct task_st *task_slot(u32 tid)
{
	u32 k = tid & task_mask;

	return bpf_map_lookup_elem(&tasks, &k);
}

/* st, tid's slot, holds tid's state (tid 0, the idle task, never has any: a free slot reads tid 0) */
static __always_inline bool slot_holds(const struct task_st *st, u32 tid)
{
	return st && st->tid == tid && tid;
}

/* tid's state, or NULL */
static __always_inline struct task_st *task_find(u32 tid)
{
	struct task_st *st = task_slot(tid);

	if (slot_holds(st, tid))
		return st;
	return spilled ? bpf_map_lookup_elem(&task_spill, &tid) : NULL;
}

/* tid's state, created when asked (only ever by tid itself, so two creations of one task do not
 * race). Two tasks of one slot claiming it at the same instant could, and 5.10 has no
 * compare-and-swap for BPF: the later claim wins, the other's first event lands in its state and
 * its next ones in the spill, and `polled_tasks` stays one too high (the gates open for nothing) */
static __always_inline struct task_st *task_get(u32 tid, bool create)
{
	struct task_st *st = task_find(tid);

	if (st || !create || !tid)
		return st;
	st = task_slot(tid);
	if (st && !st->tid) {
		st->tid = tid;
		__sync_fetch_and_add(&polled_tasks, 1);
		return st;
	}
	if (bpf_map_update_elem(&task_spill, &tid, &task_zero, BPF_NOEXIST)) {
		ctr_inc(C_TASK_FULL);
		return NULL;
	}
	__sync_fetch_and_add(&spilled, 1);
	__sync_fetch_and_add(&polled_tasks, 1);
	st = bpf_map_lookup_elem(&task_spill, &tid);
	if (st)
		st->tid = tid;
	return st;
}

/* drop tid's state: its slot cleared (free again), or its spill entry deleted */
static __always_inline void task_drop(u32 tid)
{
	u32 k = tid & task_mask;

	if (slot_holds(task_slot(tid), tid)) {
		bpf_map_update_elem(&tasks, &k, &task_zero, BPF_ANY);
		__sync_fetch_and_add(&polled_tasks, -1);
	} else if (spilled && !bpf_map_delete_elem(&task_spill, &tid)) {
		__sync_fetch_and_add(&spilled, -1);
		__sync_fetch_and_add(&polled_tasks, -1);
	}
}

static __always_inline void ungate(struct task_st *st)
{
	if (st->gated) {
		st->gated = 0;
		__sync_fetch_and_add(&sleepers, -1);
	}
}

/* --- tracepoint path: busy-window accounting (the fentry path times its poll loop instead) --- */

/* on-CPU ns of the window not yet recorded, including the stretch running now */
static __always_inline u64 busy_now(struct task_st *st, u64 now)
{
	return st->busy_cpu + (st->t_run && now > st->t_run ? now - st->t_run : 0);
}

/* at a polled issue in this task (it is on CPU) */
static __always_inline void busy_open(struct task_st *st, u64 now)
{
	st->t_busy = st->t_run = now;
	st->busy_cpu = st->cpu_woke = st->busy_off = 0;
	__sync_fetch_and_add(&busy_tasks, 1);
}

/* nothing left in flight, or the window went stale (its completions ran in another task):
 * what is not yet recorded is dropped */
static __always_inline void busy_close(struct task_st *st)
{
	if (!st->t_busy)
		return;
	st->t_busy = st->t_run = 0;
	__sync_fetch_and_add(&busy_tasks, -1);
}

/* REQ_POLLED (5.16+) or REQ_HIPRI (older): the bit number differs per kernel */
enum req_flag_bits___old { __REQ_HIPRI___old = 0 };

static __always_inline u32 polled_mask(void)
{
	if (bpf_core_enum_value_exists(enum req_flag_bits, __REQ_POLLED))
		return 1U << bpf_core_enum_value(enum req_flag_bits, __REQ_POLLED);
	if (bpf_core_enum_value_exists(enum req_flag_bits___old, __REQ_HIPRI___old))
		return 1U << bpf_core_enum_value(enum req_flag_bits___old, __REQ_HIPRI___old);
	return 0;
}

/* before 5.16 the disk hung off the request, not the queue */
struct request___old {
	struct gendisk *rq_disk;
} __attribute__((preserve_access_index));

static __always_inline u32 rq_dev(struct request *rq, const bool btf)
{
	struct request_queue *q;
	struct gendisk *disk;

	if (bpf_core_field_exists(((struct request_queue *)0)->disk)) {
		q = RD(btf, rq, q);
		disk = RD(btf, q, disk);
	} else if (btf) {
		/* loaded from the trusted request, the disk is a BTF pointer too: direct loads, where
		 * three probe reads cost ~0.3 µs per I/O on 5.10 (each one a helper call) */
		disk = ((struct request___old *)rq)->rq_disk;
	} else {
		/* a probe read yields an untrusted pointer that may only be probe-read */
		disk = BPF_CORE_READ((struct request___old *)rq, rq_disk);
		if (!disk)
			return 0;
		return ((u32)BPF_CORE_READ(disk, major) << 20) | (u32)BPF_CORE_READ(disk, first_minor);
	}
	if (!disk)
		return 0;
	return ((u32)RD(btf, disk, major) << 20) | (u32)RD(btf, disk, first_minor);
}

#define S_IFMT  00170000
#define S_IFBLK 0060000

/* device of a file: the block device itself, or the filesystem's device */
static __always_inline u32 file_dev(struct file *f)
{
	struct inode *ino = f->f_inode;

	if (!ino)
		return 0;
	if ((ino->i_mode & S_IFMT) == S_IFBLK)
		return ino->i_rdev;
	return BPF_CORE_READ(ino, i_sb, s_dev);
}

/* The device's block of series in `fdev`, created on first use; NULL when the map is full (then
 * fhist_add falls back to `hists`). */
static __always_inline struct dev_hists *fdev_get(u32 dev)
{
	struct dev_hists *d = bpf_map_lookup_elem(&fdev, &dev);
	u32 z = 0;

	if (d)
		return d;
	d = bpf_map_lookup_elem(&zero_fdev, &z);
	if (!d)
		return NULL;
	bpf_map_update_elem(&fdev, &dev, d, BPF_NOEXIST);
	return bpf_map_lookup_elem(&fdev, &dev);
}

/* hist_add into a device block (fentry path: no lookup per kind); d NULL: into `hists` */
static __always_inline struct hist *fhist_add(struct dev_hists *d, u32 dev, u32 kind, u64 v)
{
	if (!d)
		return hist_add(dev, kind, v);
	if (kind >= HK_MAX)
		return NULL;
	return hist_put(&d->h[kind], v);
}

/* Account the sleep/off-CPU/wake histograms of the task's pending sleep under dev (d: its block
 * in `fdev` on the fentry path; NULL: `hists`). origin: the slept I/O's issue as its found time
 * counts it (0: not known, a sleep without its I/O). The sleep starts after it (on 5.10 once the
 * waiting call has reached blk_poll): that stretch goes to wake_ovh's aux0/aux1 (a sum, no further
 * lookup on this path), so that the model can time the wake-up from D's own origin. */
static __always_inline struct hist *flush_sleep(struct task_st *st, struct dev_hists *d, u32 dev,
						u64 origin, u64 start)
{
	struct hist *h = fhist_add(d, dev, HK_SLEEP_REQ, st->req_sleep);

	if (st->t_off && st->t_on > st->t_off) {
		u64 elapsed = st->t_on - start;
		struct hist *o;

		fhist_add(d, dev, HK_OFFCPU, st->t_on - st->t_off);
		o = fhist_add(d, dev, HK_WAKE_OVH, elapsed > st->req_sleep ? elapsed - st->req_sleep : 0);
		if (o && origin && origin <= start) {
			__sync_fetch_and_add(&o->aux0, start - origin);
			__sync_fetch_and_add(&o->aux1, 1);
		}
		if (st->t_wake && st->t_on > st->t_wake)
			fhist_add(d, dev, HK_WAKE_LAT, st->t_on - st->t_wake);
	}
	return h;
}

/* A sleep that never met a polled completion in its task: keep its timings, under the device the
 * task last polled, and count it. */
static __always_inline void flush_unmatched(struct task_st *st)
{
	struct dev_ctr *dc;

	flush_sleep(st, NULL, st->dev, 0, st->t_sleep);
	dc = dev_ctr_get(st->dev);
	if (dc)
		dc->unmatched++;
	st->t_sleep = 0;
}

/* v's ns into its bucket of a per-bucket sum in a device block (hpoll.h, dev_hists) */
static __always_inline void bucket_sum_add(__u64 *sums, u64 v)
{
	u64 idx = bucket_of(v);

	/* 5.10's verifier can lose idx's bits here (a range with umin > umax on a path it explores)
	 * and then refuses the atomic add as misaligned: the mask keeps the offset's low bits known */
	barrier_var(idx);
	idx &= 0xff;
	if (idx < HP_NB)
		__sync_fetch_and_add(&sums[idx], v);
}

/* issue -> found of one slept I/O, classified; woke = when the poller was back on CPU (d as for
 * flush_sleep) */
static __always_inline void record_found(struct dev_hists *d, u32 dev, struct dev_calib *cal,
					 bool slept_through, u64 found, u64 issued, u64 woke)
{
	if (slept_through) {
		struct hist *h = fhist_add(d, dev, HK_FOUND_SLEPT, found);

		if (d)
			bucket_sum_add(d->found_sum, found);
		/* its look: the woken poller's switch-in -> found, where its latency ends (the
		 * model's λ on the fentry path; the tracepoint path's model takes the calibration's
		 * minimum instead, src/model/analyse.ts lookAfterWake) */
		if (h && woke && issued + found >= woke) {
			__sync_fetch_and_add(&h->aux0, issued + found - woke);
			__sync_fetch_and_add(&h->aux1, 1);
		}
		if (cal && cal->min_dev_ns && woke > issued + cal->min_dev_ns)
			fhist_add(d, dev, HK_OVERSLEEP_UB, woke - (issued + cal->min_dev_ns));
	} else {
		fhist_add(d, dev, HK_DEV_SPUN, found);
		if (d)
			bucket_sum_add(d->spun_sum, found);
		if (cal && (!cal->min_dev_ns || found < cal->min_dev_ns))
			cal->min_dev_ns = found;
	}
}

/* ------------------------------------------ fentry path: records deferred to the next loop start */

/* Each takes the blocks of `dev` where the caller has them (NULL: look up), and looks up its own
 * when its record belongs to another device (a ring over several devices). */

static __always_inline void pend_sleep(struct task_st *st, u32 dev, struct dev_hists *fd)
{
	u32 sd = st->p_sleep_dev;
	struct dev_hists *f = sd == dev && fd ? fd : fdev_get(sd);
	struct hist *h = flush_sleep(st, f, sd, st->p_origin, st->p_sleep);
	u64 hpt = st->p_hpt;

	/* the ring's (its loop's, see ring_flush) */
	if (st->t_off && st->t_on > st->t_off) {
		st->r_off_ns += st->t_on - st->t_off;
		if (st->t_wake && st->t_on > st->t_wake)
			st->r_wlat_ns += st->t_on - st->t_wake;
	}
	/* the sleep the kernel computed: hybrid_poll_time / 2 */
	if (h && hpt && hpt < 0x7fffffffffffffffULL) {
		__sync_fetch_and_add(&h->aux0, hpt / 2);
		__sync_fetch_and_add(&h->aux1, 1);
	}
	/* where a classic loop would start polling after D's origin (the model's L): the slept I/O's
	 * issue -> its loop's start, in iopoll's aux (wake_ovh's holds issue -> sleep start, later by
	 * the loop start's own records and the path to the timer) */
	if (st->p_loop_off) {
		struct hist *l = f ? &f->h[HK_IOPOLL] : hist_get(sd, HK_IOPOLL);

		if (l) {
			__sync_fetch_and_add(&l->aux0, st->p_loop_off);
			__sync_fetch_and_add(&l->aux1, 1);
		}
	}
	st->pend &= ~PEND_SLEEP;
}

static __always_inline void pend_loop(struct task_st *st, u32 dev, struct dev_hists *fd, struct dev_ctr *dc)
{
	u32 ld = st->p_dev;
	struct dev_hists *f = ld == dev && fd ? fd : fdev_get(ld);
	struct hist *h;

	st->r_loops++;
	st->r_loop_ns += st->p_loop;
	st->r_spin_ns += st->p_spin;
	fhist_add(f, ld, HK_IOPOLL, st->p_loop);
	h = fhist_add(f, ld, HK_SPIN, st->p_spin);
	if (h && (st->pend & PEND_WOKE)) {
		/* wake-up -> completion found: what the tracepoint path can time too (reaping after it
		 * stays in the spin histogram, not in this sum) */
		__sync_fetch_and_add(&h->aux0, st->p_woke_found);
		__sync_fetch_and_add(&h->aux1, 1);
	}
	if (st->p_reaped) {
		/* the pass's completion work after the poll that found them */
		struct dev_ctr *c = ld == dev && dc ? dc : dev_ctr_get(ld);

		if (c) {
			c->reap_ns += st->p_reap_ns;
			c->reaped += st->p_reaped;
		}
	}
	st->pend &= ~(PEND_LOOP | PEND_WOKE);
}

/* the shortest call that found a completion after a sleep: a first look at a queue whose
 * completion was already there */
static __always_inline void pend_min(struct task_st *st, u32 dev, struct dev_calib *cal)
{
	u32 md = st->p_min_dev;
	struct dev_calib *c = md == dev && cal ? cal : calib_of(fdev_get(md), md);

	if (c && (!c->min_found_ns || st->p_min_ns < c->min_found_ns))
		c->min_found_ns = st->p_min_ns;
	if (c && st->p_min_io_ns && (!c->min_found_io_ns || st->p_min_io_ns < c->min_found_io_ns))
		c->min_found_io_ns = st->p_min_io_ns;
	st->pend &= ~PEND_MIN;
}

/* The slept request found. A oneshot poll is one look at the queue, so the count of calls is
 * exact; a spinning call loops inside, so its length decides, against the shortest call that
 * found a completion on this device (pend_min first) plus, for a call that found k > 1, k - 1 times
 * the shortest such call per completion: at depth the call that finds a slept request after its
 * sleep finds the completions of the whole sleep (QD32: 31), and its length grows with them. */
static __always_inline void pend_found(struct task_st *st, u32 dev, struct dev_hists *fd,
				       struct dev_calib *cal, struct dev_ctr *dc)
{
	u32 fdv = st->p_found_dev;
	struct dev_hists *f = fdv == dev && fd ? fd : fdev_get(fdv);
	struct dev_calib *c = fdv == dev && cal ? cal : calib_of(f, fdv);
	bool through = st->p_through;
	struct dev_ctr *k;

	if (!st->p_exact)
		through = !c || st->p_call_ns * 100 <= (c->min_found_ns + (st->p_found_k > 1 ?
				(u64)(st->p_found_k - 1) * c->min_found_io_ns : 0)) * calib_pct;
	if (st->p_found)
		record_found(f, fdv, c, through, st->p_found, st->p_issued, st->p_woke);
	k = fdv == dev && dc ? dc : dev_ctr_get(fdv);
	if (k) {
		if (st->p_exact)
			k->exact++;
		else
			k->calibrated++;
		if (through) {
			/* a call whose completions were there at its start: what one finding look costs */
			u64 d = st->p_call_ns, n = st->p_found_k;

			k->looks++;
			k->look_ns += d;
			k->look_k += n;
			k->look_kk += n * n;
			k->look_kns += n * d;
			k->wake_look_ns += st->p_wake_call;
		}
	}
	st->pend &= ~PEND_FOUND;
}

/* a classic loop's first pass: its start -> the end of the call that found completions, after j
 * calls that found nothing */
static __always_inline void pend_plook(struct task_st *st, u32 dev, struct dev_ctr *dc)
{
	struct dev_ctr *k = st->p_pl_dev == dev && dc ? dc : dev_ctr_get(st->p_pl_dev);
	u64 d = st->p_pl_ns, n = st->p_pl_k, j = st->p_pl_j;

	if (k) {
		k->pass_looks++;
		k->pass_look_ns += d;
		k->pass_look_k += n;
		k->pass_look_kk += n * n;
		k->pass_look_kns += n * d;
		k->pass_look_j += j;
		k->pass_look_jj += j * j;
		k->pass_look_jk += j * n;
		k->pass_look_jns += j * d;
	}
	st->pend &= ~PEND_PLOOK;
}

/* everything pending, with one lookup per block for dev (dc: its counters, NULL: look up) */
static __always_inline void pend_record(struct task_st *st, u32 dev, struct dev_ctr *dc)
{
	struct dev_hists *fd = NULL;
	struct dev_calib *cal = NULL;

	if (st->pend & (PEND_SLEEP | PEND_LOOP | PEND_MIN | PEND_FOUND))
		fd = fdev_get(dev);
	if (st->pend & (PEND_MIN | PEND_FOUND))
		cal = calib_of(fd, dev);
	if (st->pend & PEND_SLEEP)
		pend_sleep(st, dev, fd);
	if (st->pend & PEND_LOOP)
		pend_loop(st, dev, fd, dc);
	if (st->pend & PEND_MIN)
		pend_min(st, dev, cal);
	if (st->pend & PEND_FOUND)
		pend_found(st, dev, fd, cal, dc);
	if (st->pend & PEND_PLOOK)
		pend_plook(st, dev, dc);
}

/* a new ring's entry before its fields are set: from .bss, not the stack (the loop-start program
 * that inlines ring_get is near the 512-byte stack limit) */
static struct ring_st ring_zero;

/* a poll call on dev in a pass that also polled `with`: the device it shares its poller with */
static __always_inline void shared_poll(u32 dev, u32 with)
{
	struct dev_ctr *dc = dev_ctr_get(dev);

	if (dc) {
		dc->shared_polls++;
		if (with != dev)
			dc->shared_with = with;
	}
}

/* The ring's entry; created (with its process, setup flags and comm) when rctx is given. */
static __always_inline struct ring_st *ring_get(u64 key, struct io_ring_ctx *rctx)
{
	struct ring_st *r = bpf_map_lookup_elem(&rings, &key);

	if (r || !rctx)
		return r;
	bpf_map_update_elem(&rings, &key, &ring_zero, BPF_NOEXIST);
	r = bpf_map_lookup_elem(&rings, &key);
	if (r && !r->tgid) {
		r->tgid = bpf_get_current_pid_tgid() >> 32;
		r->flags = rctx->flags; /* fixed at io_uring_setup */
		bpf_get_current_comm(r->comm, sizeof(r->comm));
	}
	return r;
}

/* the task's passes and sleeps not yet in its ring's entry */
static __always_inline void ring_flush(struct task_st *st, struct ring_st *r)
{
	if (r && st->r_passes) {
		r->passes += st->r_passes;
		r->sleeps += st->r_sleeps;
		r->hpt = st->r_hpt;
		r->reaped += st->r_reaped;
		r->loops += st->r_loops;
		r->loop_ns += st->r_loop_ns;
		r->spin_ns += st->r_spin_ns;
		r->off_ns += st->r_off_ns;
		r->wlat_ns += st->r_wlat_ns;
	}
	st->r_passes = st->r_sleeps = st->r_reaped = st->r_loops = 0;
	st->r_loop_ns = st->r_spin_ns = st->r_off_ns = st->r_wlat_ns = 0;
}

/* a pass on ring key: the task's passes not yet in `rings` belong to r_key, so another ring's go
 * first (its entry exists: every loop creates its ring's at its start) */
static __always_inline void ring_move(struct task_st *st, u64 key)
{
	if (st->r_key == key)
		return;
	if (st->r_passes)
		ring_flush(st, ring_get(st->r_key, NULL));
	st->r_key = key;
}

/* --------------------------------------------------------------------------- block layer */

static __always_inline int on_issue(struct request *rq, const bool btf)
{
	/* the kernel stamps start_time_ns whenever iostats, blk-stat or a scheduler need it (iostats
	 * is on by default); only requests without it pay for a map entry */
	if (!RD(btf, rq, start_time_ns)) {
		u64 key = (u64)rq, ts = bpf_ktime_get_ns();

		if (bpf_map_update_elem(&starts, &key, &ts, BPF_ANY))
			ctr_inc(C_START_FULL);
	}
	if (RD(btf, rq, cmd_flags) & polled_mask()) {
		/* This task now has one more polled I/O in flight: the depth its next waiting call
		 * starts at (dev_ctr.waits, inflight_sum). Both paths count it; the fentry path needs
		 * nothing else from the block layer (its poll loop is bracketed by io_do_iopoll), so
		 * there this is its whole extra cost per polled issue: one task lookup, one clock read
		 * for the stale reset, a few stores. Non-polled I/O never gets here. */
		u32 tid = (u32)bpf_get_current_pid_tgid();
		struct task_st *st = task_get(tid, true);
		u64 now = bpf_ktime_get_ns();

		if (!st)
			return 0;
		if (st->inflight && now - st->t_polled > stale_ns) {
			/* nothing issued here for a second with I/O in flight: its completions ran
			 * elsewhere, the count is stale */
			st->inflight = 0;
			busy_close(st);
		}
		st->inflight++;
		st->t_polled = now;
		/* fentry: the device of a loop before its first classic_poll (the first loop's sample) */
		st->dev = rq_dev(rq, btf);
		if (fentry_path)
			return 0;
		st->wait_open = 1;
		if (!st->t_busy)
			busy_open(st, now);
	}
	return 0;
}

/* The depth a waiting call starts at: the task's polled I/Os in flight (dev_ctr.waits,
 * inflight_sum). Where each path takes the sample: hp_iopoll_in (fentry), on_complete (tracepoint:
 * into the device's rq_lat slot where it has one). */
static __always_inline void depth_sample(struct dev_ctr *dc, const struct task_st *st)
{
	dc->waits++;
	dc->inflight_sum += st->inflight;
}

/*
 * One record per polled completion in the task: spin = on-CPU time since the last wake-up (all of
 * it when nothing slept since the previous record), iopoll = all on-CPU time since the previous
 * record + the off-CPU time of the hybrid sleeps in it. So, as on the fentry path,
 * iopoll - offcpu - spin is the on-CPU time before the wake-ups (the model's c_sw per sleep), and
 * iopoll - offcpu is all of the window's on-CPU time. At QD1 a record is one I/O's window (issue
 * -> completion); with several I/Os in flight a completion gets the time since the previous one,
 * so the totals close (sum = the busy on-CPU time) while the per-I/O split is approximate.
 * d: the device's block in `fdev` (NULL: `hists`).
 */
static __always_inline void busy_record(struct task_st *st, struct dev_hists *d, u32 dev, u64 now)
{
	u64 cpu = busy_now(st, now);

	fhist_add(d, dev, HK_SPIN, cpu > st->cpu_woke ? cpu - st->cpu_woke : 0);
	fhist_add(d, dev, HK_IOPOLL, cpu + st->busy_off);
	st->busy_cpu = st->cpu_woke = st->busy_off = 0;
	if (st->t_run)
		st->t_run = now;
}

/* tracepoint path: first polled completion in a task after its sleep. Device time is only
 * observable as wake -> found; found within calib_pct of the shortest such time = first poll.
 * d: the device's block in `fdev` (NULL: `hists` and `calib`); the classification is counted in
 * its rq_lat slot s, else in its counters dc (both NULL: not counted). */
static __always_inline void classify_tp(struct task_st *st, struct dev_hists *d, struct rq_slot *s,
					struct dev_ctr *dc, u32 dev, u64 now, u64 issued)
{
	u64 woke = st->t_on ? st->t_on : st->t_sleep;
	u64 post = now > woke ? now - woke : 0;
	struct dev_calib *cal = calib_of(d, dev);
	bool slept_through = true;
	struct hist *h;

	flush_sleep(st, d, dev, issued, st->t_sleep);
	/* wake-up -> completion, the quantity the fentry path has in aux0/aux1 too; the spin sample
	 * itself (on-CPU after the wake-up) is the busy window's, busy_record() */
	h = d ? &d->h[HK_SPIN] : hist_get(dev, HK_SPIN);
	if (h) {
		__sync_fetch_and_add(&h->aux0, post);
		__sync_fetch_and_add(&h->aux1, 1);
	}
	if (cal) {
		if (!cal->min_found_ns || post < cal->min_found_ns)
			cal->min_found_ns = post;
		slept_through = post * 100 <= cal->min_found_ns * calib_pct;
	}
	record_found(d, dev, cal, slept_through, now > issued ? now - issued : 0, issued, woke);
	if (s)
		s->calibrated++;
	else if (dc)
		dc->calibrated++;
	st->t_sleep = 0;
	ungate(st);
}

/* The origin of a slept I/O's found time (dev_spun, found_slept, the offset in wake_ovh's aux):
 * its driver issue, where the device's own clock starts, as rq->io_start_time_ns
 * (blk_mq_start_request stamps it when the queue keeps blk-stat statistics: 5.10's hybrid polling,
 * whose poll_stat is timed from it, wbt, iolatency); else ts, the allocation (start_time_ns) or
 * this program's issue time. */
static __always_inline u64 rq_origin(struct request *rq, u64 ts, const bool btf)
{
	u64 io = 0;

	if (bpf_core_field_exists(rq->io_start_time_ns))
		io = RD(btf, rq, io_start_time_ns);
	return io > ts ? io : ts;
}

/* rq_lat runs from the request's start_time_ns (allocation: what iostat's await measures, and
 * what fio's completion latency includes when dispatch is delayed) to completion; requests the
 * kernel does not stamp are timed from block_rq_issue via the starts map. */
static __always_inline int on_complete(struct request *rq, int error, unsigned int nr_bytes,
				       const bool btf)
{
	u64 ts = RD(btf, rq, start_time_ns), now = 0;
	bool polled = RD(btf, rq, cmd_flags) & polled_mask();
	bool poll_path = polled && !fentry_path && polled_tasks;
	struct dev_ctr *dc = NULL;
	struct dev_hists *fd;
	struct rq_slot *slot;
	struct task_st *st;
	u32 dev, tid, w = 1;

	/* The tracepoint path's records of a polled completion (the busy window's end, the found
	 * time) take the clock first, so that all of this program's run time lies after them: the
	 * completion edge a poller's own CPU holds besides the window (docs/validation-legacy.md).
	 * rq_lat takes the same reading. */
	if (poll_path)
		now = bpf_ktime_get_ns();
	if (!ts) {
		/* not stamped by the kernel (iostats off): timed from issue, every one (weight 1) */
		u64 key = (u64)rq, *tsp = bpf_map_lookup_elem(&starts, &key);

		if (!tsp) {
			ctr_inc(C_ISSUE_MISSED);
			return 0;
		}
		ts = *tsp;
		bpf_map_delete_elem(&starts, &key);
		ctr_inc(C_TS_HASH);
	} else {
		w = rq_weight(rq, ts, btf);
	}
	dev = rq_dev(rq, btf);
	if (!dev)
		return 0;
	slot = rq_slot_of(dev);
	if (!now && (w || !slot))
		now = bpf_ktime_get_ns();
	rq_lat_add(slot, dev, ts, now, w, nr_bytes, error, polled);
	if (!polled)
		return 0;
	if (!slot) {
		dc = dev_ctr_get(dev);
		if (dc)
			dc->polled_ios++;
	}
	/* fentry path: nothing more per completion. The poll loop is bracketed by io_do_iopoll, whose
	 * exit returns the completions it reaped: the task's in-flight count drops there, once per
	 * pass instead of a task lookup per completion. */
	if (!poll_path)
		return 0;
	tid = (u32)bpf_get_current_pid_tgid();
	st = task_get(tid, false);
	if (!st)
		return 0;
	/*
	 * The depth at the start of the waiting call, tracepoint path: its poll passes are invisible
	 * here, so the stand-in is the first polled completion in the task after its latest polled
	 * issue, read before its decrement. Nothing completes in the task between that issue and the
	 * waiting call it then makes, so this is the depth that call started at whenever the poller
	 * issues before each wait: a closed loop at iodepth N that refills after each reap reads N
	 * (as the fentry path does), a sync RWF_HIPRI job 1. Its bias: a poller that waits several
	 * times between issues (draining without refilling) is sampled at the first of those waits
	 * only, the deepest, so its mean reads high.
	 */
	if (st->wait_open) {
		st->wait_open = 0;
		if (slot) {
			slot->waits++;
			slot->inflight_sum += st->inflight;
		} else if (dc) {
			depth_sample(dc, st);
		}
	}
	/* A completion on one device while this task has I/O in flight and its last polled event
	 * was on another: one poller over several devices at once (a ring over several, or one task
	 * polling two rings), the tracepoint path's stand-in for the passes it cannot see. A sync
	 * job (one I/O in flight) that alternates devices is not. */
	if (st->inflight > 1 && st->dev && st->dev != dev)
		shared_poll(dev, st->dev);
	/* the poll path follows every polled request: its sleeps and classification are counts */
	if (st->inflight)
		st->inflight--;
	st->t_polled = now;
	st->dev = dev;
	/* the device's series in one block, one lookup for all of this completion's records (as
	 * the fentry path has them) instead of one per histogram */
	fd = (st->t_sleep && !st->test) || st->t_busy ? fdev_get(dev) : NULL;
	if (st->t_sleep && !st->test)
		classify_tp(st, fd, slot, dc, dev, now, rq_origin(rq, ts, btf));
	if (st->t_busy) {
		busy_record(st, fd, dev, now);
		if (!st->inflight)
			busy_close(st);
	}
	return 0;
}

SEC("tp_btf/block_rq_issue")
int hp_rq_issue(u64 *ctx)
{
	return on_issue(issue_arg1 ? (struct request *)ctx[1] : (struct request *)ctx[0], true);
}

SEC("raw_tp/block_rq_issue")
int hp_rq_issue_rt(u64 *ctx)
{
	return on_issue(issue_arg1 ? (struct request *)ctx[1] : (struct request *)ctx[0], false);
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(hp_rq_done, struct request *rq, int error, unsigned int nr_bytes)
{
	return on_complete(rq, error, nr_bytes, true);
}

SEC("raw_tp/block_rq_complete")
int BPF_PROG(hp_rq_done_rt, struct request *rq, int error, unsigned int nr_bytes)
{
	return on_complete(rq, error, nr_bytes, false);
}

/* ------------------------------------------------------------------- sleep and scheduling */

/*
 * A hybrid sleep is an hrtimer_sleeper armed by the polling task on itself. Which tasks poll:
 * fentry path: the task is inside io_do_iopoll and not inside classic_poll (the sleep is inlined
 * between the two); tracepoint path: the task has polled requests in flight that it issued. Both
 * are one task lookup: no stack walk, so the sleep is not shortened by its own measurement.
 */
static __always_inline int on_hrtimer_start(struct hrtimer *timer, const bool btf)
{
	struct task_st *st;
	u64 pid_tgid, now, exp;
	bool test;

	if (!polled_tasks && !test_tgid)
		return 0;
	if ((u64)RD(btf, timer, function) != (u64)&hrtimer_wakeup)
		return 0;
	/* A sleeper: the task that armed it sleeps on it (hrtimer_init_sleeper sets its task to
	 * current; before 5.4 to the task its callers pass, current at every call site; and only
	 * that task starts it), so its task field (beyond struct hrtimer: a probe read, refused to
	 * direct BTF access) is not read. Which sleeper is the hybrid sleep: fentry path, inside
	 * io_do_iopoll and outside classic_poll; tracepoint path, a task with polled I/O in flight
	 * (both tested below). */
	pid_tgid = bpf_get_current_pid_tgid();
	now = bpf_ktime_get_ns();
	test = test_tgid && (pid_tgid >> 32) == test_tgid;
	st = task_get((u32)pid_tgid, test);
	if (!st)
		return 0;
	if (test)
		st->test = 1;
	else if (fentry_path ? (!st->in_pass || st->in_cp)
			     : (!st->inflight || now - st->t_polled > stale_ns))
		return 0;
	if (st->t_sleep)
		flush_unmatched(st); /* the previous sleep met no completion */
	if (st->pend & PEND_SLEEP)
		pend_sleep(st, 0, NULL); /* a second sleep in one loop (at depth) */
	exp = RD(btf, timer, node.expires); /* absolute hard expiry, already set at this point */
	st->t_sleep = now;
	st->req_sleep = exp > now ? exp - now : 0;
	st->t_off = st->t_wake = st->t_on = 0;
	/* the wake-up, should the task never switch out (on_switch moves it to the switch-in) */
	if (st->t_busy)
		st->cpu_woke = busy_now(st, now);
	if (!st->gated) {
		st->gated = 1;
		__sync_fetch_and_add(&sleepers, 1);
	}
	ctr_inc(C_SLEEPS);
	return 0;
}

SEC("tp_btf/hrtimer_start")
int BPF_PROG(hp_hrt_start, struct hrtimer *timer)
{
	return on_hrtimer_start(timer, true);
}

SEC("raw_tp/hrtimer_start")
int BPF_PROG(hp_hrt_start_rt, struct hrtimer *timer)
{
	return on_hrtimer_start(timer, false);
}

static __always_inline int on_switch(bool preempt, struct task_struct *prev,
				     struct task_struct *next, const bool btf)
{
	struct task_st *st;
	u32 tid;
	u64 now;

	if (!sleepers && !busy_tasks)
		return 0;
	now = bpf_ktime_get_ns();
	/* a CPU's idle task (pid 0) never polls: a sleeping poller's switch-out goes to it and its
	 * switch-in comes from it, so skipping its lookup saves two of a hybrid I/O's four */
	if (!preempt || busy_tasks) {
		tid = RD(btf, prev, pid);
		st = tid ? task_find(tid) : NULL;
		/* a preemption between arming and io_schedule() is not the sleep */
		if (st && !preempt && st->gated && !st->t_off) {
			st->t_off = now;
			ctr_inc(C_SCHED_OUT);
		}
		/* any switch-out ends an on-CPU stretch of the busy window */
		if (st && st->t_run) {
			st->busy_cpu += now > st->t_run ? now - st->t_run : 0;
			st->t_run = 0;
			if (now - st->t_polled > stale_ns)
				busy_close(st);
		}
	}
	tid = RD(btf, next, pid);
	if (!tid)
		return 0;
	st = task_find(tid);
	if (!st)
		return 0;
	if (st->gated && st->t_off) {
		st->t_on = now;
		ungate(st);
		ctr_inc(C_SCHED_IN);
		if (st->t_busy) {
			st->busy_off += now - st->t_off;
			st->cpu_woke = st->busy_cpu;
		}
		if (st->test) {
			flush_sleep(st, NULL, 0, 0, st->t_sleep);
			st->t_sleep = 0;
		}
	}
	if (st->t_busy) {
		/* stale as at issue: in flight for a second with nothing polled here */
		if (now - st->t_polled > stale_ns)
			busy_close(st);
		else
			st->t_run = now;
	}
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(hp_sched_sw, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return on_switch(preempt, prev, next, true);
}

SEC("raw_tp/sched_switch")
int BPF_PROG(hp_sched_sw_rt, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return on_switch(preempt, prev, next, false);
}

static __always_inline int on_wakeup(struct task_struct *p, const bool btf)
{
	struct task_st *st;
	u32 tid;

	if (!sleepers)
		return 0;
	tid = RD(btf, p, pid);
	st = task_find(tid);
	if (st && st->gated && st->t_off && !st->t_wake) {
		st->t_wake = bpf_ktime_get_ns();
		ctr_inc(C_WAKEUPS);
	}
	return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(hp_sched_wk, struct task_struct *p)
{
	return on_wakeup(p, true);
}

SEC("raw_tp/sched_wakeup")
int BPF_PROG(hp_sched_wk_rt, struct task_struct *p)
{
	return on_wakeup(p, false);
}

/* drop the state of exiting tasks, so the gates fall back to 0 when pollers are gone */
static __always_inline int on_exit(struct task_struct *p, const bool btf)
{
	struct task_st *st;
	u32 tid;

	if (!polled_tasks)
		return 0;
	tid = RD(btf, p, pid);
	st = task_find(tid);
	if (!st)
		return 0;
	if (st->t_sleep && !st->test)
		flush_unmatched(st);
	if (st->pend)
		pend_record(st, st->dev, NULL);
	if (st->r_passes)
		ring_flush(st, ring_get(st->r_key, NULL));
	ungate(st);
	busy_close(st);
	task_drop(tid);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(hp_task_exit, struct task_struct *p)
{
	return on_exit(p, true);
}

SEC("raw_tp/sched_process_exit")
int BPF_PROG(hp_task_exit_rt, struct task_struct *p)
{
	return on_exit(p, false);
}

/* ------------------------------------------------------- io_uring poll path (fentry/fexit) */

SEC("fentry/io_do_iopoll")
int BPF_PROG(hp_iopoll_in, struct io_ring_ctx *rctx)
{
	struct task_st *st = task_get((u32)bpf_get_current_pid_tgid(), true);

	if (!st)
		return 0;
	st->in_pass = 1;
	st->in_cp = 0;
	st->pass_sleeps = 0;
	st->pass_dev = 0;
	st->pass_multi = (st->pass_multi & 1) << 1;
	st->first_pass = !st->t_loop;
	st->pass_calls = 0;
	/* io_iopoll_check (inlined into the syscall, not traceable) calls io_do_iopoll until a pass
	 * finds completions: the loop runs from the first pass's entry to that pass's exit */
	if (!st->t_loop) {
		struct dev_ctr *dc = st->dev ? dev_ctr_get(st->dev) : NULL;
		u64 key = (u64)rctx;

		/* the previous loop's records: the device serves this loop's I/O meanwhile */
		if (st->pend)
			pend_record(st, st->dev, dc);
		ring_move(st, key);
		ring_flush(st, ring_get(key, rctx));
		/* after the records: like the rest of this program they are the loop's edge, outside
		 * its window (in the gap before it) */
		st->t_loop = bpf_ktime_get_ns();
		st->loop_woke = 0;
		st->t_found = 0;
		/* the start of a waiting call: the depth it waits at, under the task's current device
		 * (its last polled issue or classic_poll). With inline submission the call's own issues
		 * are already counted: a closed loop at iodepth N reads N. */
		if (dc) {
			depth_sample(dc, st);
			/* the time since the previous loop's end: reaping its CQEs, user space, the next
			 * submissions; a gap over the stale limit is idle time, not a cost */
			if (st->t_end && st->t_loop - st->t_end < GAP_MAX_NS) {
				u64 g = st->t_loop - st->t_end, k = st->end_k;

				dc->gaps++;
				dc->gap_ns += g;
				dc->gap_k += k;
				dc->gap_kk += k * k;
				dc->gap_kns += k * g;
			}
			if (st->t_polled > st->t_end && st->t_loop > st->t_polled && st->t_loop - st->t_polled < GAP_MAX_NS) {
				dc->lead_ns += st->t_loop - st->t_polled;
				dc->leads++;
			}
		}
		st->t_end = 0;
	}
	st->t_cpf = 0;
	ctr_inc(C_IOPOLL);
	return 0;
}

/* Between the completion and the next issue: stores only (see task_st.pend). */
SEC("fexit/io_do_iopoll")
int BPF_PROG(hp_iopoll_out, struct io_ring_ctx *rctx, bool force_nonspin, int ret)
{
	struct task_st *st = task_get((u32)bpf_get_current_pid_tgid(), false);
	u64 key = (u64)rctx, now = bpf_ktime_get_ns();

	if (!st || !st->in_pass)
		return 0;
	st->in_pass = 0;
	/* the pass reaped ret of the ring's requests, issued in this task (inline submission) */
	if (ret > 0) {
		st->inflight = st->inflight > (u32)ret ? st->inflight - (u32)ret : 0;
		st->r_reaped += (u32)ret;
	}
	if (ret != 0 && st->t_loop) {
		/* The loop ends: its wall time, and its on-CPU time after the last wake-up as spin (all of
		 * it when nothing slept). The on-CPU time before the sleep is what the model's c_sw is
		 * made of: iopoll - offcpu - spin. */
		st->p_dev = st->dev;
		st->p_loop = now - st->t_loop;
		st->p_spin = now - (st->loop_woke ? st->loop_woke : st->t_loop);
		st->pend |= PEND_LOOP;
		if (st->loop_woke) {
			st->p_woke_found = (st->t_found > st->loop_woke ? st->t_found : now) - st->loop_woke;
			st->pend |= PEND_WOKE;
		}
		st->p_reaped = ret > 0 && st->t_cpf ? (u32)ret : 0;
		st->p_reap_ns = now - st->t_cpf;
		st->t_loop = 0;
		st->t_end = now;
		st->end_k = ret > 0 ? ret : 0;
	}
	/* a loop left without completions can be resumed by a call on another ring */
	ring_move(st, key);
	st->r_passes++;
	st->r_sleeps += st->pass_sleeps;
	st->r_hpt = bpf_core_field_exists(rctx->hybrid_poll_time) ? rctx->hybrid_poll_time : ~0ULL;
	return 0;
}

#define BLK_POLL_ONESHOT_ (1 << 0) /* include/linux/blkdev.h since 5.16 */

SEC("fentry/io_uring_classic_poll")
int BPF_PROG(hp_cpoll_in, struct io_kiocb *req, struct io_comp_batch *iob, unsigned int poll_flags)
{
	struct task_st *st = task_get((u32)bpf_get_current_pid_tgid(), false);
	u32 prev;

	if (!st || !st->in_pass)
		return 0;
	prev = st->dev;
	st->dev = file_dev(req->file);
	st->in_cp = 1;
	if (st->pass_calls < 255)
		st->pass_calls++;
	ctr_inc(C_CPOLL);
	/* a pass over requests of two devices: a ring over several devices (its first device's
	 * calls counted once, when the second shows). A pass that polls one device only (it stops
	 * at the first poll that finds completions: after a long sleep, always the first) shows the
	 * ring at its first poll instead: another device than the task's last polled event (the
	 * previous pass's last poll, or an issue) while more than this request is in flight; not
	 * after a pass over two devices, which counted already (a classic ring's every pass). */
	if (!st->pass_dev) {
		st->pass_dev = st->dev;
		if (!(st->pass_multi & 2) && st->inflight > 1 && prev && prev != st->dev)
			shared_poll(st->dev, prev);
	} else if (st->dev != st->pass_dev && !(st->pass_multi & 1)) {
		st->pass_multi |= 1;
		shared_poll(st->pass_dev, st->dev);
	}
	if (st->pass_multi & 1)
		shared_poll(st->dev, st->pass_dev);
	/* Runs once per request per pass. A loop with no sleep needs nothing else here: its found
	 * time and the call lengths only serve the spin after a sleep and the classification of
	 * slept requests (classic polling then costs one lookup and a few stores) */
	if (!st->t_sleep && !st->loop_woke)
		return 0;
	st->t_cp = bpf_ktime_get_ns();
	if (st->t_sleep) {
		/* the sleep inlined in io_do_iopoll belongs to this request. 7.0+ unions iopoll_start
		 * with the task_work a completion writes: read it now. BTF types that load as the
		 * union's pointer, on which the verifier refuses arithmetic: the reload from the map
		 * value is a plain number. Its histograms wait for the next loop start (pend_sleep):
		 * its fields stay until the next sleep, which records them first. */
		st->issued = bpf_core_field_exists(req->iopoll_start) ? req->iopoll_start : 0;
		st->p_origin = *(volatile u64 *)&st->issued;
		st->p_loop_off = st->p_origin && st->t_loop > st->p_origin ? st->t_loop - st->p_origin : 0;
		st->p_sleep = st->t_sleep;
		st->p_sleep_dev = st->dev;
		/* the sleep the kernel computed: ctx->hybrid_poll_time / 2, not yet updated (req and its
		 * ctx are BTF pointers here: direct loads, no probe-read helper calls) */
		st->p_hpt = bpf_core_field_exists(((struct io_ring_ctx *)0)->hybrid_poll_time) ? req->ctx->hybrid_poll_time : 0;
		st->pend |= PEND_SLEEP;
		st->slept_req = (u64)req;
		st->polls = 0;
		st->t_woke = st->t_on ? st->t_on : st->t_sleep;
		st->loop_woke = st->t_woke;
		st->t_sleep = 0;
		st->pass_sleeps++;
		ungate(st);
	}
	if ((u64)req == st->slept_req)
		st->polls++;
	return 0;
}

/* Between the completion and the next issue: stores only (see task_st.pend). */
SEC("fexit/io_uring_classic_poll")
int BPF_PROG(hp_cpoll_out, struct io_kiocb *req, struct io_comp_batch *iob, unsigned int poll_flags,
	     int ret)
{
	struct task_st *st = task_get((u32)bpf_get_current_pid_tgid(), false);
	u64 now, d, issued;
	u32 dev;

	if (!st || !st->in_cp)
		return 0;
	st->in_cp = 0;
	if (ret <= 0)
		return 0;
	/* a poll that found completions: the pass's completion work starts here (hp_iopoll_out) */
	now = bpf_ktime_get_ns();
	st->t_cpf = now;
	/* The first pass of a loop without a sleep found completions: the loop's start -> this call's
	 * end, after j calls that found nothing. What a poller-paced classic loop pays per loop before
	 * its completion work, the looks the model charges; from clock reads already taken. A oneshot
	 * call (one look at a queue: a ring over several devices) always counts; a call that spins
	 * until it finds (one device) only when it found 2+: a call that waited for the device finds
	 * the one that ended its wait, while a poller-paced loop finds several already there. */
	if (st->first_pass && !st->loop_woke && ((poll_flags & BLK_POLL_ONESHOT_) || ret >= 2)) {
		st->p_pl_ns = now - st->t_loop;
		st->p_pl_k = (u32)ret;
		st->p_pl_j = st->pass_calls ? st->pass_calls - 1 : 0;
		st->p_pl_dev = st->dev;
		st->pend |= PEND_PLOOK;
	}
	/* only loops that slept use what follows (see hp_cpoll_in) */
	if (!st->loop_woke)
		return 0;
	dev = st->dev;
	d = now - st->t_cp;
	if (st->t_found <= st->loop_woke)
		st->t_found = now;
	/* the loop's shortest finding call, per device (another device's goes now) */
	if ((st->pend & PEND_MIN) && st->p_min_dev != dev)
		pend_min(st, 0, NULL);
	if (!(st->pend & PEND_MIN)) {
		st->p_min_ns = d;
		st->p_min_io_ns = 0;
		st->p_min_dev = dev;
		st->pend |= PEND_MIN;
	} else if (d < st->p_min_ns) {
		st->p_min_ns = d;
	}
	if (ret > 1) {
		u64 per_io = d / (u32)ret;

		if (!st->p_min_io_ns || per_io < st->p_min_io_ns)
			st->p_min_io_ns = per_io;
	}
	if ((u64)req != st->slept_req)
		return 0;
	/* found after the sleep; a second slept request of this loop (at depth): the first goes now */
	if (st->pend & PEND_FOUND) {
		if (st->p_min_dev == st->p_found_dev)
			pend_min(st, 0, NULL);
		pend_found(st, 0, NULL, NULL, NULL);
	}
	issued = st->issued;
	st->p_found_dev = dev;
	st->p_exact = st->polls > 1 || (poll_flags & BLK_POLL_ONESHOT_);
	st->p_through = st->polls <= 1;
	st->p_call_ns = d;
	st->p_found_k = (u32)ret;
	st->p_found = issued && issued < now ? now - issued : 0;
	st->p_issued = issued;
	st->p_woke = st->t_woke;
	st->p_wake_call = st->t_cp > st->t_woke ? st->t_cp - st->t_woke : 0;
	st->pend |= PEND_FOUND;
	st->slept_req = 0;
	return 0;
}

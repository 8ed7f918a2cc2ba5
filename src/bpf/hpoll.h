/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Definitions shared by the BPF program (hpoll.bpf.c) and its loader (loader.c).
 * The histogram grid is the one of src/model/buckets.ts: log-linear, 4 sub-buckets per power of
 * two, in ns, bucketed on v-1 so that bucket i holds (upper(i-1), upper(i)]:
 *   i 0..4 : v = 0..4 exactly                     upper = i
 *   i >= 5 : u = v-1, e = floor(log2 u), s = (u >> (e-2)) & 3
 *            i = 1 + 4(e-1) + s                   upper = (5+s) * 2^(e-2)
 *   i = HP_NB-1: overflow (> 1.5 * 2^36 ns)        upper = +Inf
 */
#ifndef HPOLL_H
#define HPOLL_H

#define HP_NB 144

/* Order and names match HIST_KINDS in src/bpf/types.ts. */
enum hp_kind {
	HK_RQ_LAT = 0,     /* request start -> complete (polled I/O: -> reaped); aux0 bytes, aux1 errors */
	HK_IOPOLL,         /* wall time of one poll loop: first io_do_iopoll() pass -> exit of the pass that found completions (fentry);
			    * tracepoint: on-CPU time of the busy window since the previous polled completion + its sleeps' off-CPU time;
			    * fentry aux0 sum of (the slept I/O's issue -> its loop's start), aux1 sleeps in it */
	HK_SPIN,           /* on-CPU time after the last wake-up: loop end (fentry) or polled completion (tracepoint);
			    * without a sleep the whole loop (fentry) or busy window since the previous completion (tracepoint);
			    * aux0 ns, aux1 loops (fentry) or I/Os (tracepoint) that slept: wake-up -> completion */
	HK_SLEEP_REQ,      /* hybrid sleep requested: hrtimer expiry - now; aux0 sum of hybrid_poll_time/2, aux1 samples */
	HK_OFFCPU,         /* switch-out -> switch-in of that sleep */
	HK_WAKE_OVH,       /* timer expiry -> back on CPU: (switch-in - sleep start) - requested, >= 0; >= offcpu - requested;
			    * aux0 sum of (sleep start - the slept I/O's issue, the origin of its found time), aux1 sleeps in it */
	HK_WAKE_LAT,       /* sched_wakeup -> switch-in */
	HK_DEV_SPUN,       /* issue -> found, I/O still pending after the sleep (issue: rq_origin(); fentry: iopoll_start) */
	HK_FOUND_SLEPT,    /* issue -> found, I/O already complete at wake-up (censored); aux0 sum of its look (the
			    * woken poller's switch-in -> found), aux1 looks */
	HK_OVERSLEEP_UB,   /* switch-in - (issue + minimum dev_spun time of the device) */
	HK_MAX
};

struct hist_key {
	__u32 dev;   /* kernel dev_t of the whole disk: major << 20 | minor; 0 = test sleeper */
	__u32 kind;  /* enum hp_kind */
};

struct hist {
	__u64 slots[HP_NB];
	__u64 sum;   /* ns */
	__u64 aux0;
	__u64 aux1;
};

/* rq_lat fast path: a per-CPU array of device slots (the first free or own slot of HP_RQ_PROBES
 * from the hash of dev); a device that finds all taken on that CPU uses the hists map. A device
 * may hold two slots of one CPU (a slot before it freed when its device went): the loader merges
 * every slot and the map by device. */
#define HP_RQ_SLOTS 32 /* a power of two */
#define HP_RQ_PROBES 4

/* per-task state: the default number of slots of the `tasks` array (the loader's --task-slots) */
#define HP_TASK_SLOTS 8192 /* a power of two */

struct rq_slot {
	struct hist h;
	/* after h, in the cache line of h.sum, aux0, aux1: a completion that is only counted (not
	 * sampled) touches that one line */
	__u64 ios;   /* completions, every one (h counts the sampled ones with their weight) */
	__u64 polled; /* polled completions, every one (dev_ctr.polled_ios of a device without a slot) */
	/* tracepoint path, what a polled completion counted in dev_ctr (same names) before it had its
	 * slot in hand: no dev_ctrs lookup per completion; the loader adds them to the device's */
	__u64 waits;
	__u64 inflight_sum;
	__u64 calibrated;
	__u32 dev;   /* 0: free */
	__u32 pad;
};

static inline __u32 hp_rq_slot(__u32 dev)
{
	return (dev * 2654435761u) >> 27; /* top 5 bits: 0..HP_RQ_SLOTS-1 */
}

/* Per device, shared: calibration of the found_slept / dev_spun split. Plain stores: a lost
 * update only delays convergence of a minimum. */
struct dev_calib {
	__u64 min_found_ns;     /* shortest wake -> found (tracepoint) or found-call time (fentry) */
	__u64 min_found_io_ns;  /* fentry: shortest found-call time per completion, of calls that found 2+ */
	__u64 min_dev_ns;       /* shortest dev_spun issue -> found: bound for oversleep_ub */
};

/* Every histogram of one polled device and its calibration in one map value (the `fdev` map), so
 * that a poll program or a slept completion finds all it adds to with one lookup instead of one
 * per kind. The loader merges them with the `hists` and `calib` maps (a device without a block,
 * when `fdev` is full, uses those). */
struct dev_hists {
	struct hist h[HK_MAX];
	struct dev_calib cal;
	/* dev_spun's and found_slept's ns per bucket: where in its bucket the exact device time, or
	 * the found time of an I/O complete at wake-up, lies (a bucket is 20 % wide, several µs at
	 * 50 µs, and the model's optimal sleep depends on the device's minimum within it). Only in
	 * the block: a device on the `hists` fallback has none. */
	__u64 spun_sum[HP_NB];
	__u64 found_sum[HP_NB];
};

/* Per device, per CPU: counters that are not histogram counts. */
struct dev_ctr {
	__u64 polled_ios;       /* polled requests completed (with a slot in rq_slots: counted there) */
	__u64 exact;            /* sleeps classified by counting polls (found_slept / dev_spun) */
	__u64 calibrated;       /* sleeps classified against the calibrated threshold */
	__u64 unmatched;        /* sleeps that never met a polled completion in the same task */
	/* The poller's queue depth: waiting calls at whose start it was sampled, and the sum over them
	 * of the task's polled I/Os in flight then (inflight_sum / waits: the mean depth a wait sees).
	 * fentry: the first io_do_iopoll pass of each poll loop; tracepoint: the first polled
	 * completion in a task after its latest polled issue (hpoll.bpf.c, depth_sample). */
	__u64 waits;
	__u64 inflight_sum;
	/* fentry path, the poller's time around its polling (the model's submission and reaping
	 * costs at depth): the gaps between a poll loop's end and the task's next loop start (under a
	 * stale limit), with k the completions the ending loop reaped: count, sum of gaps, sum of k,
	 * of k^2 and of k * gap (a least-squares fit per call and per I/O); and the time from the
	 * exit of the poll that found completions to the end of its pass (the completion work inside
	 * the loop), with the completions that pass reaped. */
	__u64 gaps;
	__u64 gap_ns;
	__u64 gap_k;
	__u64 gap_kk;
	__u64 gap_kns;
	__u64 reap_ns;
	__u64 reaped;
	/* fentry: the last polled issue of the task -> the start of its next poll loop (the rest of
	 * the submission and the waiting call's entry, on CPU while the device already runs) */
	__u64 lead_ns;
	__u64 leads;
	/* fentry: the poll call that found a slept request already complete (slept through): its
	 * length and the completions it found (ret), for a per-call + per-completion fit, and the
	 * woken poller's time from its switch-in to that call's entry */
	__u64 looks;
	__u64 look_ns;
	__u64 look_k;
	__u64 look_kk;
	__u64 look_kns;
	__u64 wake_look_ns;
	/* fentry: a loop without a sleep whose first pass, of oneshot polls (a ring over several
	 * devices), found completions: the loop's start -> the end of the call that found them (the
	 * pass's own start, its calls and the programs around them), with k the completions found and
	 * j the calls before it that found nothing, as count and sums of y, k, k², k·y, j, j², j·k, j·y
	 * for a fit y = per loop + per completion · k + per empty call · j: a classic ring's looks */
	__u64 pass_looks;
	__u64 pass_look_ns;
	__u64 pass_look_k;
	__u64 pass_look_kk;
	__u64 pass_look_kns;
	__u64 pass_look_j;
	__u64 pass_look_jj;
	__u64 pass_look_jk;
	__u64 pass_look_jns;
	/* fentry: poll calls on this device in io_do_iopoll passes that also polled another device's
	 * requests: a ring over several devices, one poller for all of them (its per-device records
	 * split the ring's loops; the model leaves such a device's figures out) */
	__u64 shared_polls;
	/* fentry: a device polled in such a pass together with this one (the pass's first device, or
	 * for that one the second): plain store, the last seen; linking every device of a ring to
	 * another of it, so the exporter can group a ring's devices and model them as one poller */
	__u32 shared_with;
};

/* Per io_uring ring (fentry path), keyed by the ctx pointer. */
struct ring_st {
	__u64 passes;           /* io_do_iopoll passes */
	__u64 sleeps;           /* hybrid sleeps */
	__u64 hpt;              /* ctx->hybrid_poll_time after the last pass (LLONG_MAX: no estimate) */
	/* the ring's poll loops, whichever devices they polled: what the poller spent on this ring */
	__u64 reaped;           /* completions its passes reaped */
	__u64 loops;            /* poll loops ended */
	__u64 loop_ns;          /* their wall time, first pass entry -> finding pass exit */
	__u64 spin_ns;          /* their on-CPU time after the last wake-up */
	__u64 off_ns;           /* off-CPU time of their sleeps */
	__u64 wlat_ns;          /* wake-up -> switch-in of those sleeps (charged to the poller on 6.13+) */
	__u32 tgid;
	__u32 flags;            /* ctx->flags (io_uring setup flags) */
	char comm[16];
};

/* Global per-CPU counters. Names in loader.c (ctr_names). */
enum hp_ctr {
	C_START_FULL = 0,   /* drop: start-time map full at issue */
	C_ISSUE_MISSED,     /* drop: completion without a known issue time */
	C_TASK_FULL,        /* drop: per-task state: its slot taken and task_spill full */
	C_HIST_FULL,        /* drop: histogram map full */
	C_TS_HASH,          /* completions timed from the start-time map (no kernel timestamp) */
	C_SLEEPS,           /* hybrid sleeps detected */
	C_SCHED_OUT,
	C_SCHED_IN,
	C_WAKEUPS,
	C_IOPOLL,           /* io_do_iopoll passes (fentry) */
	C_CPOLL,            /* io_uring_classic_poll calls (fentry) */
	C_MAX
};

#endif

// SPDX-License-Identifier: GPL-2.0
/* The floor: the cheapest useful tp_btf pair on the block tracepoints, one per-CPU counter each
 * (and the same on the scheduler hooks, below). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 3); /* issue, complete, the other hooks */
	__type(key, u32);
	__type(value, u64);
} floor_ctr SEC(".maps");

static __always_inline void inc(u32 k)
{
	u64 *v = bpf_map_lookup_elem(&floor_ctr, &k);

	if (v)
		(*v)++;
}

SEC("tp_btf/block_rq_issue")
int floor_issue(u64 *ctx)
{
	inc(0);
	return 0;
}

SEC("tp_btf/block_rq_complete")
int floor_done(u64 *ctx)
{
	inc(1);
	return 0;
}

/* the same on the scheduler and timer hooks our gated programs use: what merely being attached
 * there costs (the gates should leave ours at this) */
SEC("tp_btf/sched_switch")
int floor_sw(u64 *ctx)
{
	inc(2);
	return 0;
}

SEC("tp_btf/sched_wakeup")
int floor_wk(u64 *ctx)
{
	inc(2);
	return 0;
}

SEC("tp_btf/hrtimer_start")
int floor_hrt(u64 *ctx)
{
	inc(2);
	return 0;
}

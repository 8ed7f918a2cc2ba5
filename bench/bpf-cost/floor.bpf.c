// SPDX-License-Identifier: GPL-2.0
/* The floor: the cheapest useful tp_btf pair on the block tracepoints, one per-CPU counter each. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
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

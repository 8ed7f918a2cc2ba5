// SPDX-License-Identifier: GPL-2.0
/* Where hp_rq_done's nanoseconds go: one program per ingredient on block_rq_complete, all attached
 * in one fio run (parts.sh): e0/e5 count only (first and last attached: the order's effect),
 * e1 + the clock read, e2 + rq->q->disk -> dev, e3 + clock and per-CPU histogram update, e4 all of
 * the old hot path. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "hpoll.h"
char LICENSE[] SEC("license") = "GPL";
struct { __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY); __uint(max_entries, 8); __type(key, u32); __type(value, u64); } c SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY); __uint(max_entries, HP_RQ_SLOTS); __type(key, u32); __type(value, struct rq_slot); } slots SEC(".maps");
static __always_inline void inc(u32 k, u64 v) { u64 *p = bpf_map_lookup_elem(&c, &k); if (p) *p += v; }
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
static __always_inline u64 bucket_of(u64 v)
{
	u64 u, e, idx;
	if (v <= 4) return v;
	u = v - 1; e = log2_u64(u);
	idx = 1 + 4 * (e - 1) + ((u >> (e - 2)) & 3);
	return idx < HP_NB - 1 ? idx : HP_NB - 1;
}
static __always_inline u32 rq_dev(struct request *rq)
{
	struct gendisk *disk = rq->q->disk;
	if (!disk) return 0;
	return ((u32)disk->major << 20) | (u32)disk->first_minor;
}
SEC("tp_btf/block_rq_complete") int BPF_PROG(e0_count, struct request *rq) { inc(0, 1); return 0; }
SEC("tp_btf/block_rq_complete") int BPF_PROG(e1_ktime, struct request *rq) { inc(1, bpf_ktime_get_ns()); return 0; }
SEC("tp_btf/block_rq_complete") int BPF_PROG(e2_dev, struct request *rq) { inc(2, rq_dev(rq)); return 0; }
SEC("tp_btf/block_rq_complete") int BPF_PROG(e3_hist, struct request *rq, int error, unsigned int nr_bytes)
{
	u64 ts = rq->start_time_ns, now = bpf_ktime_get_ns(), d = now > ts ? now - ts : 0;
	u32 k = 3; struct rq_slot *s = bpf_map_lookup_elem(&slots, &k);
	u64 idx = bucket_of(d);
	barrier_var(idx);
	if (idx >= HP_NB || !s) return 0;
	s->h.slots[idx]++; s->h.sum += d; s->h.aux0 += nr_bytes; if (error) s->h.aux1++;
	return 0;
}
SEC("tp_btf/block_rq_complete") int BPF_PROG(e4_full, struct request *rq, int error, unsigned int nr_bytes)
{
	u64 ts = rq->start_time_ns, now, d;
	u32 dev = rq_dev(rq), k = hp_rq_slot(dev); struct rq_slot *s = bpf_map_lookup_elem(&slots, &k);
	u64 idx;
	if (!ts || !dev) return 0;
	now = bpf_ktime_get_ns(); d = now > ts ? now - ts : 0;
	idx = bucket_of(d);
	barrier_var(idx);
	if (idx >= HP_NB || !s) return 0;
	if (s->dev == dev || !s->dev) { s->dev = dev; s->h.slots[idx]++; s->h.sum += d; s->h.aux0 += nr_bytes; if (error) s->h.aux1++; }
	if (!(rq->cmd_flags & (1u << 22))) return 0;
	inc(5, 1);
	return 0;
}
SEC("tp_btf/block_rq_complete") int BPF_PROG(e5_count, struct request *rq) { inc(6, 1); return 0; }

// SPDX-License-Identifier: GPL-2.0
/*
 * hybridpoll-bpf: loads hpoll.bpf.c, attaches each program on its own, then answers requests.
 * Spawned once by the exporter (src/bpf/client.ts); the protocol is in README.md:
 *   stdout: one JSON object per line: {"type":"hello",...} once after attach, then one
 *           {"type":"snap",...} or {"type":"error",...} per request; {"type":"fatal",...} before
 *           exiting on a setup failure.
 *   stdin:  "snap <id>" -> one snapshot; "quit" -> exit.
 * Exits, detaching everything, on stdin EOF, "quit", SIGTERM, SIGINT, SIGHUP, SIGPIPE or the
 * death of its parent, so no program can outlive the exporter. SIGUSR1 detaches the programs and
 * SIGUSR2 attaches them again (the VM suite's traced/untraced pairs).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "hpoll.h"
#include "hpoll.skel.h"

#ifndef HP_VERSION
#define HP_VERSION "dev"
#endif
#define PROTO 2
#define MAX_ATTEMPTS 8
#define REQ_MAX 256

static const char *kind_names[HK_MAX] = {
	"rq_lat", "iopoll", "spin", "sleep_req", "offcpu", "wake_ovh",
	"wake_lat", "dev_spun", "found_slept", "oversleep_ub",
};
static const char *ctr_names[C_MAX] = {
	"start_map_full", "issue_missed", "task_map_full", "hist_map_full", "ts_from_map",
	"sleeps_detected", "sched_out", "sched_in", "wakeups", "iopoll_passes", "classic_polls",
};

/* ------------------------------------------------------------------------ program table */

enum via { VIA_TP_BTF, VIA_RAW_TP, VIA_FENTRY, VIA_FEXIT };
static const char *via_names[] = { "tp_btf", "raw_tp", "fentry", "fexit" };

struct variant {
	const char *prog;
	enum via via;
};

struct logical {
	const char *name;     /* the `program` label */
	const char *target;   /* tracepoint or kernel function */
	struct variant v[2];  /* preferred first */
	int nv;
	bool poll_path;       /* part of the fentry/fexit poll path: all four or none */
	int chosen;           /* index into v, or -1 */
	bool disabled;        /* not wanted (forced tracepoint path, excluded): no failure */
	char reason[256];     /* why not attached, or why the preferred variant was not used */
	struct bpf_link *link;
};

#define TP(n, t, a, b) { .name = n, .target = t, .v = { { a, VIA_TP_BTF }, { b, VIA_RAW_TP } }, .nv = 2 }
#define TRAMP(n, t, a, via) { .name = n, .target = t, .v = { { a, via } }, .nv = 1, .poll_path = true }
static struct logical progs[] = {
	TP("rq_issue", "block_rq_issue", "hp_rq_issue", "hp_rq_issue_rt"),
	TP("rq_complete", "block_rq_complete", "hp_rq_done", "hp_rq_done_rt"),
	TP("hrtimer_start", "hrtimer_start", "hp_hrt_start", "hp_hrt_start_rt"),
	TP("sched_switch", "sched_switch", "hp_sched_sw", "hp_sched_sw_rt"),
	TP("sched_wakeup", "sched_wakeup", "hp_sched_wk", "hp_sched_wk_rt"),
	TP("task_exit", "sched_process_exit", "hp_task_exit", "hp_task_exit_rt"),
	TRAMP("iopoll_enter", "io_do_iopoll", "hp_iopoll_in", VIA_FENTRY),
	TRAMP("iopoll_exit", "io_do_iopoll", "hp_iopoll_out", VIA_FEXIT),
	TRAMP("classic_poll_enter", "io_uring_classic_poll", "hp_cpoll_in", VIA_FENTRY),
	TRAMP("classic_poll_exit", "io_uring_classic_poll", "hp_cpoll_out", VIA_FEXIT),
};
#define NPROGS (int)(sizeof(progs) / sizeof(progs[0]))

/* ------------------------------------------------------------------------------ options */

static struct {
	bool force_tracepoint;
	bool raw_tp;
	__u32 test_tgid;
	__u32 calib_pct;
	const char *exclude;
	const char *sysfs;
	__u64 ring_key[2];
	__u32 sample;
	__u32 task_slots;
	int verbose;
} opt = { .calib_pct = 200, .sysfs = "/sys", .sample = 1, .task_slots = HP_TASK_SLOTS };

#define SAMPLE_MAX 65536

static volatile sig_atomic_t stop;
static void on_signal(int s) { (void)s; stop = 1; }

/* SIGUSR1 detaches every program, SIGUSR2 attaches them again (loaded, maps kept): lets a test
 * compare a workload with and without the programs, alternating, without reloading them. */
static volatile sig_atomic_t want_detached;
static void on_detach_signal(int s) { want_detached = s == SIGUSR1; }

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* ------------------------------------------------------------------------------- output */

static void json_str(const char *s)
{
	putchar('"');
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static void fatal(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	printf("{\"type\":\"fatal\",\"msg\":");
	json_str(msg);
	printf("}\n");
	fflush(stdout);
	fprintf(stderr, "hybridpoll-bpf: %s\n", msg);
	exit(1);
}

/* ------------------------------------------------------------------ libbpf log capture */

/* The first program named in a warning during a load is the one that failed; the verifier's
 * last line before the end of its log says why. */
static struct {
	bool on;
	char prog[64];
	char msg[160];
	char last_log[160];
	char verifier[160];
	bool in_log;
} cap;

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char line[1024];
	const char *p, *q;
	va_list aq;

	/* verbose: the whole message (a verifier log is one message, far longer than line) */
	va_copy(aq, ap);
	if (opt.verbose > 1 || (opt.verbose && level <= LIBBPF_INFO))
		vfprintf(stderr, fmt, aq);
	va_end(aq);
	vsnprintf(line, sizeof(line), fmt, ap);
	if (!cap.on || level != LIBBPF_WARN)
		return 0;
	line[strcspn(line, "\n")] = 0;
	if (strstr(line, "-- BEGIN PROG LOAD LOG --")) {
		cap.in_log = true;
		return 0;
	}
	if (strstr(line, "-- END PROG LOAD LOG --")) {
		cap.in_log = false;
		snprintf(cap.verifier, sizeof(cap.verifier), "%s", cap.last_log);
		return 0;
	}
	if (cap.in_log) {
		if (line[0])
			snprintf(cap.last_log, sizeof(cap.last_log), "%.150s", line);
		return 0;
	}
	if (!cap.prog[0] && (p = strstr(line, "prog '")) && (q = strchr(p + 6, '\''))) {
		snprintf(cap.prog, sizeof(cap.prog), "%.*s", (int)(q - p - 6), p + 6);
		q += (q[1] == ':') ? 2 : 1;
		while (*q == ' ')
			q++;
		snprintf(cap.msg, sizeof(cap.msg), "%s", q);
	}
	return 0;
}

/* ------------------------------------------------------------------------ BTF probing */

static struct btf *vmlinux;

/* Loads "r0 = 0; exit" as a tracing program with the real attach target: refused with EPERM
 * where the kernel forbids trampolines, ENOENT/EINVAL where the target cannot be traced. */
static int probe_stub(__u32 btf_id, enum bpf_attach_type at)
{
	struct bpf_insn insns[2] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = 0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, o, .expected_attach_type = at, .attach_btf_id = btf_id);
	int fd = bpf_prog_load(BPF_PROG_TYPE_TRACING, "hp_probe", "GPL", insns, 2, &o);

	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

/* NULL when this variant can be tried, else why not */
static const char *variant_problem(const struct logical *l, const struct variant *v)
{
	static char why[160];
	char name[128];
	int id, err;

	switch (v->via) {
	case VIA_TP_BTF:
		snprintf(name, sizeof(name), "btf_trace_%s", l->target);
		id = btf__find_by_name_kind(vmlinux, name, BTF_KIND_TYPEDEF);
		if (id <= 0)
			return "tracepoint not in kernel BTF";
		err = probe_stub(id, BPF_TRACE_RAW_TP);
		break;
	case VIA_FENTRY:
	case VIA_FEXIT:
		id = btf__find_by_name_kind(vmlinux, l->target, BTF_KIND_FUNC);
		if (id <= 0)
			return "function not in kernel BTF (absent or inlined)";
		err = probe_stub(id, v->via == VIA_FENTRY ? BPF_TRACE_FENTRY : BPF_TRACE_FEXIT);
		break;
	default:
		return NULL;
	}
	if (!err)
		return NULL;
	snprintf(why, sizeof(why), "probe load refused: %s", strerror(-err));
	return why;
}

/* number of tracepoint arguments, from the btf_trace_<tp> typedef (first param is the context) */
static int tp_nargs(const char *tp)
{
	char name[128];
	const struct btf_type *t;
	int id;

	snprintf(name, sizeof(name), "btf_trace_%s", tp);
	id = btf__find_by_name_kind(vmlinux, name, BTF_KIND_TYPEDEF);
	if (id <= 0)
		return -1;
	t = btf__type_by_id(vmlinux, id);
	while (t && (btf_is_typedef(t) || btf_is_ptr(t)))
		t = btf__type_by_id(vmlinux, t->type);
	if (!t || !btf_is_func_proto(t))
		return -1;
	return btf_vlen(t) - 1;
}

/* struct s has a member m, also inside anonymous structs/unions */
static bool has_member_in(const struct btf_type *t, const char *m, int depth)
{
	const struct btf_member *mem = btf_members(t);

	for (int i = 0; i < btf_vlen(t); i++, mem++) {
		const char *n = btf__name_by_offset(vmlinux, mem->name_off);
		const struct btf_type *mt;

		if (n && *n) {
			if (!strcmp(n, m))
				return true;
			continue;
		}
		mt = btf__type_by_id(vmlinux, mem->type);
		while (mt && btf_is_mod(mt))
			mt = btf__type_by_id(vmlinux, mt->type);
		if (mt && btf_is_composite(mt) && depth < 4 && has_member_in(mt, m, depth + 1))
			return true;
	}
	return false;
}

static bool has_member(const char *s, const char *m)
{
	int id = btf__find_by_name_kind(vmlinux, s, BTF_KIND_STRUCT);

	return id > 0 && has_member_in(btf__type_by_id(vmlinux, id), m, 0);
}

/* which request flag marks polled I/O on this kernel, for the hello line */
static const char *polled_flag_name(void)
{
	int id = btf__find_by_name_kind(vmlinux, "req_flag_bits", BTF_KIND_ENUM);
	const struct btf_type *t;
	const struct btf_enum *e;
	static char buf[64];

	if (id <= 0)
		return "unknown";
	t = btf__type_by_id(vmlinux, id);
	e = btf_enum(t);
	for (int i = 0; i < btf_vlen(t); i++, e++) {
		const char *n = btf__name_by_offset(vmlinux, e->name_off);

		if (!strcmp(n, "__REQ_POLLED") || !strcmp(n, "__REQ_HIPRI")) {
			snprintf(buf, sizeof(buf), "%s=%d", n, e->val);
			return buf;
		}
	}
	return "none";
}

/* ----------------------------------------------------------------------- load + attach */

static bool in_list(const char *list, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = list; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
		if (!strncmp(p, name, n) && (p[n] == ',' || !p[n]))
			return true;
	return false;
}

static void disable_poll_path(const char *why, const struct logical *culprit)
{
	for (int i = 0; i < NPROGS; i++) {
		struct logical *l = &progs[i];

		if (!l->poll_path || l->chosen < 0)
			continue;
		l->chosen = -1;
		if (l != culprit)
			snprintf(l->reason, sizeof(l->reason), "%s", why);
	}
}

static struct logical *find_prog(const char *name, int *vi)
{
	for (int i = 0; i < NPROGS; i++)
		for (int j = 0; j < progs[i].nv; j++)
			if (!strcmp(progs[i].v[j].prog, name)) {
				*vi = j;
				return &progs[i];
			}
	return NULL;
}

static bool fentry_selected(void)
{
	for (int i = 0; i < NPROGS; i++)
		if (progs[i].poll_path && progs[i].chosen < 0)
			return false;
	return true;
}

static void destroy_links(void)
{
	for (int i = 0; i < NPROGS; i++) {
		bpf_link__destroy(progs[i].link);
		progs[i].link = NULL;
	}
}

/* One try: open, configure, load, attach. Returns the skeleton, or NULL after adjusting the
 * program table for the next try. */
static struct hpoll *attempt(bool issue_arg1)
{
	struct hpoll *skel = hpoll__open();
	bool fentry = fentry_selected();
	struct bpf_program *p;
	int err, vi;

	if (!skel)
		fatal("cannot open the BPF object: %s", strerror(errno));
	skel->rodata->fentry_path = fentry;
	skel->rodata->issue_arg1 = issue_arg1;
	skel->rodata->test_tgid = opt.test_tgid;
	skel->rodata->calib_pct = opt.calib_pct;
	skel->rodata->task_mask = opt.task_slots - 1;
	if (bpf_map__set_max_entries(skel->maps.tasks, opt.task_slots))
		fatal("cannot size the task map");
	skel->data->sample_n = opt.sample;
	bpf_object__for_each_program(p, skel->obj) {
		struct logical *l = find_prog(bpf_program__name(p), &vi);

		bpf_program__set_autoload(p, l && l->chosen == vi);
	}

	memset(&cap, 0, sizeof(cap));
	cap.on = true;
	err = hpoll__load(skel);
	cap.on = false;
	if (err) {
		struct logical *l = cap.prog[0] ? find_prog(cap.prog, &vi) : NULL;

		if (!l)
			fatal("loading the BPF object failed: %s%s%s", strerror(-err),
			      cap.msg[0] ? ": " : "", cap.msg);
		snprintf(l->reason, sizeof(l->reason), "%s load failed: %.100s%s%.120s", via_names[l->v[vi].via],
			 cap.msg, cap.verifier[0] ? ": " : "", cap.verifier);
		if (l->poll_path)
			disable_poll_path("fentry path incomplete: another poll program failed", l);
		else
			l->chosen = vi + 1 < l->nv ? vi + 1 : -1;
		hpoll__destroy(skel);
		return NULL;
	}

	for (int i = 0; i < NPROGS; i++) {
		struct logical *l = &progs[i];

		if (l->chosen < 0)
			continue;
		p = bpf_object__find_program_by_name(skel->obj, l->v[l->chosen].prog);
		l->link = bpf_program__attach(p);
		if (l->link)
			continue;
		err = -errno;
		snprintf(l->reason, sizeof(l->reason), "%s attach failed: %s", via_names[l->v[l->chosen].via],
			 strerror(-err));
		if (l->poll_path) {
			disable_poll_path("fentry path incomplete: another poll program failed", l);
		} else if (l->chosen + 1 < l->nv) {
			l->chosen++;
		} else {
			l->chosen = -1; /* stays loaded, unattached; the others run */
			continue;
		}
		destroy_links();
		hpoll__destroy(skel);
		return NULL;
	}
	return skel;
}

/* ------------------------------------------------------------------------------ dumping */

static int ncpu;

static __u64 mix64(__u64 x)
{
	x ^= x >> 30; x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27; x *= 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* a stable id for a ring that does not reveal the kernel pointer */
static __u64 ring_id(__u64 ptr)
{
	return mix64(mix64(ptr ^ opt.ring_key[0]) ^ opt.ring_key[1]) >> 16;
}

static bool pid_alive(__u32 pid)
{
	return kill((pid_t)pid, 0) == 0 || errno == EPERM;
}

/* histograms from the shared hists map, the fentry path's device blocks and the per-CPU rq_lat
 * slots, summed */
struct agg {
	struct hist_key key;
	struct hist h;
	__u64 ios; /* rq_lat: completions counted one by one (the buckets are weighted when sampled) */
	__u64 polled; /* rq_lat: polled completions counted in the per-CPU slots */
	/* rq_lat: the tracepoint path's dev_ctr counts kept in the slots (struct rq_slot) */
	__u64 waits, inflight_sum, calibrated;
	/* the calibration in the device's `fdev` block, when it has one */
	struct dev_calib cal;
	/* dev_spun, found_slept: ns per bucket from the `fdev` block; only when no sample of the
	 * series went to `hists` (which has none), so that each bucket's sum belongs to all of its
	 * count */
	__u64 bsum[HP_NB];
	bool has_bsum, in_hists;
};
static struct agg *aggs;
static int naggs, caggs;

/* the series of k collected so far (NULL: none) */
static struct agg *agg_find(struct hist_key k)
{
	for (int i = 0; i < naggs; i++)
		if (aggs[i].key.dev == k.dev && aggs[i].key.kind == k.kind)
			return &aggs[i];
	return NULL;
}

static struct hist *agg_for(struct hist_key k)
{
	struct agg *e = agg_find(k);

	if (e)
		return &e->h;
	if (naggs == caggs) {
		struct agg *n = realloc(aggs, (caggs ? caggs * 2 : 64) * sizeof(*aggs));

		if (!n)
			return NULL;
		aggs = n;
		caggs = caggs ? caggs * 2 : 64;
	}
	memset(&aggs[naggs], 0, sizeof(aggs[naggs]));
	aggs[naggs].key = k;
	return &aggs[naggs++].h;
}

static struct agg *agg_of(struct hist *h)
{
	return (struct agg *)((char *)h - offsetof(struct agg, h));
}

static void hist_addto(struct hist *dst, const struct hist *src)
{
	for (int i = 0; i < HP_NB; i++)
		dst->slots[i] += src->slots[i];
	dst->sum += src->sum;
	dst->aux0 += src->aux0;
	dst->aux1 += src->aux1;
}

static bool hist_empty(const struct hist *h)
{
	for (int i = 0; i < HP_NB; i++)
		if (h->slots[i])
			return false;
	return true;
}

/* the fentry path's device blocks: a kind that never got a sample is no series (as in `hists`,
 * where an entry appears with its first sample) */
static void collect_fdev(struct hpoll *skel)
{
	int fd = bpf_map__fd(skel->maps.fdev);
	struct dev_hists *v = malloc(sizeof(*v));
	__u32 key, *prev = NULL;
	struct hist *a;

	while (v && bpf_map_get_next_key(fd, prev, &key) == 0) {
		struct hist_key rk = { .dev = key, .kind = HK_RQ_LAT };
		struct agg *r;

		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, v))
			continue;
		for (__u32 kind = 0; kind < HK_MAX; kind++) {
			struct hist_key hk = { .dev = key, .kind = kind };

			if (!hist_empty(&v->h[kind]) && (a = agg_for(hk))) {
				hist_addto(a, &v->h[kind]);
				const __u64 *sums = kind == HK_DEV_SPUN ? v->spun_sum :
						    kind == HK_FOUND_SLEPT ? v->found_sum : NULL;

				if (sums && !agg_of(a)->in_hists) {
					memcpy(agg_of(a)->bsum, sums, sizeof(agg_of(a)->bsum));
					agg_of(a)->has_bsum = true;
				}
			}
		}
		/* a calibration comes after a polled completion, so the device has its rq_lat */
		if ((r = agg_find(rk)))
			r->cal = v->cal;
	}
	free(v);
}

static void collect_hists(struct hpoll *skel)
{
	int fd = bpf_map__fd(skel->maps.hists), sfd = bpf_map__fd(skel->maps.rq_slots);
	size_t ssz = (sizeof(struct rq_slot) + 7) & ~7UL;
	void *vals = calloc(ncpu, ssz);
	struct hist_key key, *prev = NULL;
	struct hist *a, h;

	naggs = 0;
	while (bpf_map_get_next_key(fd, prev, &key) == 0) {
		prev = &key;
		if (key.kind < HK_MAX && !bpf_map_lookup_elem(fd, &key, &h) && (a = agg_for(key))) {
			hist_addto(a, &h);
			agg_of(a)->in_hists = !hist_empty(&h);
			/* rq_lat in `hists` (a device whose per-CPU slot is taken) times every completion */
			for (int i = 0; key.kind == HK_RQ_LAT && i < HP_NB; i++)
				agg_of(a)->ios += h.slots[i];
		}
	}
	for (__u32 k = 0; vals && k < HP_RQ_SLOTS; k++) {
		if (bpf_map_lookup_elem(sfd, &k, vals))
			continue;
		for (int c = 0; c < ncpu; c++) {
			struct rq_slot *s = (struct rq_slot *)((char *)vals + c * ssz);
			struct hist_key hk = { .dev = s->dev, .kind = HK_RQ_LAT };

			if (s->dev && (a = agg_for(hk))) {
				hist_addto(a, &s->h);
				agg_of(a)->ios += s->ios;
				agg_of(a)->polled += s->polled;
				agg_of(a)->waits += s->waits;
				agg_of(a)->inflight_sum += s->inflight_sum;
				agg_of(a)->calibrated += s->calibrated;
			}
		}
	}
	free(vals);
	collect_fdev(skel);
}

static void dump_hists(struct hpoll *skel)
{
	collect_hists(skel);
	printf("\"hists\":[");
	for (int n = 0; n < naggs; n++) {
		struct agg *e = &aggs[n];
		__u64 count = 0;
		bool f = true;

		for (int i = 0; i < HP_NB; i++)
			count += e->h.slots[i];
		/* the count is the sum of the buckets, so _count always equals the +Inf bucket */
		printf("%s{\"dev\":\"%u:%u\",\"kind\":\"%s\",\"count\":%llu,\"sum\":%llu,\"aux0\":%llu,"
		       "\"aux1\":%llu,", n ? "," : "", e->key.dev >> 20, e->key.dev & 0xfffff,
		       kind_names[e->key.kind], (unsigned long long)count, (unsigned long long)e->h.sum,
		       (unsigned long long)e->h.aux0, (unsigned long long)e->h.aux1);
		/* rq_lat: the exact number of completions; count estimates it when sampling */
		if (e->key.kind == HK_RQ_LAT)
			printf("\"ios\":%llu,", (unsigned long long)e->ios);
		/* flat, index then count, ascending: one array per histogram for the exporter to parse */
		printf("\"b\":[");
		for (int i = 0; i < HP_NB; i++) {
			if (!e->h.slots[i])
				continue;
			printf("%s%d,%llu", f ? "" : ",", i, (unsigned long long)e->h.slots[i]);
			f = false;
		}
		printf("]");
		/* dev_spun, found_slept: each counted bucket's ns, the same indices as "b" */
		if (e->has_bsum) {
			f = true;
			printf(",\"bs\":[");
			for (int i = 0; i < HP_NB; i++) {
				if (!e->h.slots[i])
					continue;
				printf("%s%d,%llu", f ? "" : ",", i, (unsigned long long)e->bsum[i]);
				f = false;
			}
			printf("]");
		}
		printf("}");
	}
	printf("]");
}

/* the smaller of two minimums, 0 meaning none */
static __u64 min_set(__u64 a, __u64 b)
{
	return !a || (b && b < a) ? b : a;
}

static bool dev_listed(const __u32 *devs, int n, __u32 dev)
{
	for (int i = 0; i < n; i++)
		if (devs[i] == dev)
			return true;
	return false;
}

static void dump_devs(struct hpoll *skel)
{
	int cfd = bpf_map__fd(skel->maps.dev_ctrs), kfd = bpf_map__fd(skel->maps.calib);
	size_t vsz = (sizeof(struct dev_ctr) + 7) & ~7UL;
	void *vals = calloc(ncpu, vsz);
	/* every device with counters, a calibration or polled completions in its slots */
	__u32 *devs = calloc(256 + 256 + (size_t)naggs, sizeof(*devs));
	__u32 key, *prev;
	int ndevs = 0;

	printf(",\"devs\":[");
	for (int pass = 0; pass < 2 && devs; pass++) {
		int fd = pass ? kfd : cfd;

		prev = NULL;
		while (bpf_map_get_next_key(fd, prev, &key) == 0 && ndevs < 512) {
			prev = &key;
			if (!dev_listed(devs, ndevs, key))
				devs[ndevs++] = key;
		}
	}
	for (int i = 0; devs && i < naggs; i++)
		if (aggs[i].key.kind == HK_RQ_LAT && aggs[i].polled && !dev_listed(devs, ndevs, aggs[i].key.dev))
			devs[ndevs++] = aggs[i].key.dev;
	for (int n = 0; n < ndevs && vals; n++) {
		struct dev_ctr agg = {};
		struct dev_calib cal = {};
		struct hist_key hk;
		struct agg *e;

		key = devs[n];
		hk = (struct hist_key){ .dev = key, .kind = HK_RQ_LAT };
		if (!bpf_map_lookup_elem(cfd, &key, vals))
			for (int c = 0; c < ncpu; c++) {
				struct dev_ctr *d = (struct dev_ctr *)((char *)vals + c * vsz);

				agg.polled_ios += d->polled_ios;
				agg.exact += d->exact;
				agg.calibrated += d->calibrated;
				agg.unmatched += d->unmatched;
				agg.waits += d->waits;
				agg.inflight_sum += d->inflight_sum;
				agg.gaps += d->gaps;
				agg.gap_ns += d->gap_ns;
				agg.gap_k += d->gap_k;
				agg.gap_kk += d->gap_kk;
				agg.gap_kns += d->gap_kns;
				agg.reap_ns += d->reap_ns;
				agg.reaped += d->reaped;
				agg.lead_ns += d->lead_ns;
				agg.leads += d->leads;
				agg.looks += d->looks;
				agg.look_ns += d->look_ns;
				agg.look_k += d->look_k;
				agg.look_kk += d->look_kk;
				agg.look_kns += d->look_kns;
				agg.wake_look_ns += d->wake_look_ns;
				agg.pass_looks += d->pass_looks;
				agg.pass_look_ns += d->pass_look_ns;
				agg.pass_look_k += d->pass_look_k;
				agg.pass_look_kk += d->pass_look_kk;
				agg.pass_look_kns += d->pass_look_kns;
				agg.pass_look_j += d->pass_look_j;
				agg.pass_look_jj += d->pass_look_jj;
				agg.pass_look_jk += d->pass_look_jk;
				agg.pass_look_jns += d->pass_look_jns;
				agg.shared_polls += d->shared_polls;
				if (d->shared_with)
					agg.shared_with = d->shared_with;
			}
		/* what dev's rq_lat slots and `fdev` block hold (collect_hists ran first) */
		if ((e = agg_find(hk))) {
			agg.polled_ios += e->polled;
			agg.waits += e->waits;
			agg.inflight_sum += e->inflight_sum;
			agg.calibrated += e->calibrated;
		}
		bpf_map_lookup_elem(kfd, &key, &cal);
		if (e) {
			cal.min_found_ns = min_set(cal.min_found_ns, e->cal.min_found_ns);
			cal.min_dev_ns = min_set(cal.min_dev_ns, e->cal.min_dev_ns);
			cal.min_found_io_ns = min_set(cal.min_found_io_ns, e->cal.min_found_io_ns);
		}
		printf("%s{\"dev\":\"%u:%u\",\"polled_ios\":%llu,\"classified_exact\":%llu,"
		       "\"classified_calibrated\":%llu,\"sleeps_unmatched\":%llu,\"min_found_ns\":%llu,"
		       "\"found_threshold_ns\":%llu,\"min_dev_ns\":%llu,\"waits\":%llu,"
		       "\"inflight_sum\":%llu,\"gaps\":%llu,\"gap_ns\":%llu,\"gap_k\":%llu,"
		       "\"gap_kk\":%llu,\"gap_kns\":%llu,\"reap_ns\":%llu,\"reaped\":%llu,"
		       "\"lead_ns\":%llu,\"leads\":%llu,\"looks\":%llu,\"look_ns\":%llu,"
		       "\"look_k\":%llu,\"look_kk\":%llu,\"look_kns\":%llu,\"wake_look_ns\":%llu,"
		       "\"pass_looks\":%llu,\"pass_look_ns\":%llu,\"pass_look_k\":%llu,"
		       "\"pass_look_kk\":%llu,\"pass_look_kns\":%llu,\"pass_look_j\":%llu,"
		       "\"pass_look_jj\":%llu,\"pass_look_jk\":%llu,\"pass_look_jns\":%llu,"
		       "\"shared_polls\":%llu",
		       n ? "," : "",
		       key >> 20, key & 0xfffff, (unsigned long long)agg.polled_ios,
		       (unsigned long long)agg.exact, (unsigned long long)agg.calibrated,
		       (unsigned long long)agg.unmatched, (unsigned long long)cal.min_found_ns,
		       (unsigned long long)(cal.min_found_ns * opt.calib_pct / 100),
		       (unsigned long long)cal.min_dev_ns, (unsigned long long)agg.waits,
		       (unsigned long long)agg.inflight_sum, (unsigned long long)agg.gaps,
		       (unsigned long long)agg.gap_ns, (unsigned long long)agg.gap_k,
		       (unsigned long long)agg.gap_kk, (unsigned long long)agg.gap_kns,
		       (unsigned long long)agg.reap_ns, (unsigned long long)agg.reaped,
		       (unsigned long long)agg.lead_ns, (unsigned long long)agg.leads,
		       (unsigned long long)agg.looks, (unsigned long long)agg.look_ns,
		       (unsigned long long)agg.look_k, (unsigned long long)agg.look_kk,
		       (unsigned long long)agg.look_kns, (unsigned long long)agg.wake_look_ns,
		       (unsigned long long)agg.pass_looks, (unsigned long long)agg.pass_look_ns,
		       (unsigned long long)agg.pass_look_k, (unsigned long long)agg.pass_look_kk,
		       (unsigned long long)agg.pass_look_kns, (unsigned long long)agg.pass_look_j,
		       (unsigned long long)agg.pass_look_jj, (unsigned long long)agg.pass_look_jk,
		       (unsigned long long)agg.pass_look_jns, (unsigned long long)agg.shared_polls);
		if (agg.shared_with)
			printf(",\"shared_with\":\"%u:%u\"}", agg.shared_with >> 20, agg.shared_with & 0xfffff);
		else
			printf("}");
	}
	printf("]");
	free(devs);
	free(vals);
}

static void dump_rings(struct hpoll *skel)
{
	int fd = bpf_map__fd(skel->maps.rings);
	__u64 key, *prev = NULL, dead[64];
	int ndead = 0;
	bool first = true;

	printf(",\"rings\":[");
	while (bpf_map_get_next_key(fd, prev, &key) == 0) {
		struct ring_st r;
		char comm[17];

		prev = &key;
		/* tgid 0: created this instant, its fields not yet set (ring_get) */
		if (bpf_map_lookup_elem(fd, &key, &r) || !r.tgid)
			continue;
		if (!pid_alive(r.tgid)) {
			if (ndead < 64)
				dead[ndead++] = key;
			continue;
		}
		memcpy(comm, r.comm, 16);
		comm[16] = 0;
		printf("%s{\"ring\":\"%012llx\",\"pid\":%u,\"comm\":", first ? "" : ",",
		       (unsigned long long)ring_id(key), r.tgid);
		json_str(comm);
		printf(",\"flags\":%u,\"hpt\":", r.flags);
		if (r.hpt >= 0x7fffffffffffffffULL)
			printf("null");
		else
			printf("%llu", (unsigned long long)r.hpt);
		printf(",\"sleeps\":%llu,\"passes\":%llu,\"reaped\":%llu,\"loops\":%llu,\"loop_ns\":%llu,"
		       "\"spin_ns\":%llu,\"off_ns\":%llu,\"wlat_ns\":%llu}", (unsigned long long)r.sleeps,
		       (unsigned long long)r.passes, (unsigned long long)r.reaped, (unsigned long long)r.loops,
		       (unsigned long long)r.loop_ns, (unsigned long long)r.spin_ns, (unsigned long long)r.off_ns,
		       (unsigned long long)r.wlat_ns);
		first = false;
	}
	printf("]");
	/* rings of exited processes: the LRU would evict them eventually, but not report them */
	for (int i = 0; i < ndead; i++)
		bpf_map_delete_elem(fd, &dead[i]);
}

static void dump_counters(struct hpoll *skel)
{
	int fd = bpf_map__fd(skel->maps.counters);
	__u64 *pc = calloc(ncpu, sizeof(__u64));

	printf(",\"counters\":{");
	for (__u32 i = 0; i < C_MAX; i++) {
		unsigned long long v = 0;

		if (pc && !bpf_map_lookup_elem(fd, &i, pc))
			for (int c = 0; c < ncpu; c++)
				v += pc[c];
		printf("%s\"%s\":%llu", i ? "," : "", ctr_names[i], v);
	}
	printf("},\"gates\":{\"polled_tasks\":%lld,\"sleepers\":%lld,\"busy_tasks\":%lld,\"spilled\":%lld}",
	       (long long)skel->bss->polled_tasks, (long long)skel->bss->sleepers,
	       (long long)skel->bss->busy_tasks, (long long)skel->bss->spilled);
	free(pc);
}

static int bpf_stats_enabled(void)
{
	FILE *f = fopen("/proc/sys/kernel/bpf_stats_enabled", "r");
	int v = 0;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v;
}

/* run time and count per program (kernel.bpf_stats_enabled=1), recursion misses always */
static void dump_progs(struct hpoll *skel)
{
	bool first = true;

	printf(",\"bpf_stats\":%d,\"progs\":{", bpf_stats_enabled());
	for (int i = 0; i < NPROGS; i++) {
		struct logical *l = &progs[i];
		struct bpf_prog_info info = {};
		__u32 len = sizeof(info);
		struct bpf_program *p;

		if (l->chosen < 0 || !l->link)
			continue;
		p = bpf_object__find_program_by_name(skel->obj, l->v[l->chosen].prog);
		if (!p || bpf_obj_get_info_by_fd(bpf_program__fd(p), &info, &len))
			continue;
		printf("%s\"%s\":{\"run_ns\":%llu,\"run_cnt\":%llu,\"recursion_misses\":%llu}",
		       first ? "" : ",", l->name, (unsigned long long)info.run_time_ns,
		       (unsigned long long)info.run_cnt, (unsigned long long)info.recursion_misses);
		first = false;
	}
	printf("}");
}

/* ------------------------------------------------------------------ gone devices */

/* A device whose sysfs entry is gone (loop detached, disk unplugged). Only decided when
 * <sysfs>/dev/block exists at all; 0:0 is the test-mode stand-in. */
static bool dev_gone(__u32 dev)
{
	char p[512];

	if (!dev)
		return false;
	snprintf(p, sizeof(p), "%s/dev/block/%u:%u", opt.sysfs, dev >> 20, dev & 0xfffff);
	return access(p, F_OK) != 0 && errno == ENOENT;
}

#define MAX_GONE 64

/* the devices of the maps, each checked once, and the gone ones among them */
struct devset {
	__u32 seen[MAX_GONE * 4], gone[MAX_GONE];
	int nseen, ngone;
};

static void consider(struct devset *d, __u32 dev)
{
	for (int i = 0; i < d->nseen; i++)
		if (d->seen[i] == dev)
			return;
	if (d->nseen == MAX_GONE * 4)
		return;
	d->seen[d->nseen++] = dev;
	if (d->ngone < MAX_GONE && dev_gone(dev))
		d->gone[d->ngone++] = dev;
}

static bool is_gone(const struct devset *d, __u32 dev)
{
	for (int g = 0; g < d->ngone; g++)
		if (dev && d->gone[g] == dev)
			return true;
	return false;
}

/* Deletes the map entries of devices that no longer exist, so that their series end: the kernel
 * side would keep every device it ever saw otherwise. */
static void prune_gone(struct hpoll *skel)
{
	int hfd = bpf_map__fd(skel->maps.hists), cfd = bpf_map__fd(skel->maps.dev_ctrs);
	int kfd = bpf_map__fd(skel->maps.calib), sfd = bpf_map__fd(skel->maps.rq_slots);
	int ffd = bpf_map__fd(skel->maps.fdev);
	size_t ssz = (sizeof(struct rq_slot) + 7) & ~7UL;
	struct hist_key hk, *hprev = NULL, del[HK_MAX * MAX_GONE];
	struct devset d = { .nseen = 0 };
	__u32 key32, *prev32;
	int ndel = 0;
	char root[512];
	void *vals;

	snprintf(root, sizeof(root), "%s/dev/block", opt.sysfs);
	if (access(root, F_OK))
		return;
	while (bpf_map_get_next_key(hfd, hprev, &hk) == 0) {
		hprev = &hk;
		consider(&d, hk.dev);
	}
	for (int m = 0; m < 3; m++) {
		int fd = m == 2 ? ffd : m ? kfd : cfd;

		prev32 = NULL;
		while (bpf_map_get_next_key(fd, prev32, &key32) == 0) {
			prev32 = &key32;
			consider(&d, key32);
		}
	}
	vals = calloc(ncpu, ssz);
	for (__u32 k = 0; vals && k < HP_RQ_SLOTS; k++)
		if (!bpf_map_lookup_elem(sfd, &k, vals))
			for (int c = 0; c < ncpu; c++)
				consider(&d, ((struct rq_slot *)((char *)vals + c * ssz))->dev);
	if (!d.ngone) {
		free(vals);
		return;
	}
	hprev = NULL;
	while (bpf_map_get_next_key(hfd, hprev, &hk) == 0) {
		hprev = &hk;
		if (is_gone(&d, hk.dev) && ndel < HK_MAX * MAX_GONE)
			del[ndel++] = hk;
	}
	for (int i = 0; i < ndel; i++)
		bpf_map_delete_elem(hfd, &del[i]);
	for (int g = 0; g < d.ngone; g++) {
		bpf_map_delete_elem(cfd, &d.gone[g]);
		bpf_map_delete_elem(kfd, &d.gone[g]);
		bpf_map_delete_elem(ffd, &d.gone[g]);
	}
	/* a slot index holds different devices on different CPUs: free only the gone device's copies */
	for (__u32 k = 0; vals && k < HP_RQ_SLOTS; k++) {
		bool changed = false;

		if (bpf_map_lookup_elem(sfd, &k, vals))
			continue;
		for (int c = 0; c < ncpu; c++) {
			struct rq_slot *sl = (struct rq_slot *)((char *)vals + c * ssz);

			if (is_gone(&d, sl->dev)) {
				memset(sl, 0, sizeof(*sl));
				changed = true;
			}
		}
		if (changed)
			bpf_map_update_elem(sfd, &k, vals, BPF_ANY);
	}
	free(vals);
}

static void dump(struct hpoll *skel, const char *id)
{
	prune_gone(skel);
	printf("{\"type\":\"snap\",\"id\":");
	json_str(id);
	printf(",\"t\":%llu,\"sample\":%u,", now_ns(), skel->data->sample_n);
	dump_hists(skel);
	dump_devs(skel);
	dump_rings(skel);
	dump_counters(skel);
	dump_progs(skel);
	printf("}\n");
	fflush(stdout);
}

static void hello(bool issue_arg1, int attempts, unsigned long long t0)
{
	struct utsname u;
	bool first = true;

	uname(&u);
	printf("{\"type\":\"hello\",\"proto\":%d,\"version\":\"%s\",\"pid\":%d,\"ncpu\":%d,\"nb\":%d,"
	       "\"kernel\":", PROTO, HP_VERSION, (int)getpid(), ncpu, HP_NB);
	json_str(u.release);
	printf(",\"poll_path\":\"%s\",\"programs\":{", fentry_selected() ? "fentry" : "tracepoint");
	for (int i = 0; i < NPROGS; i++) {
		struct logical *l = &progs[i];

		printf("%s\"%s\":{", first ? "" : ",", l->name);
		first = false;
		if (l->link) {
			printf("\"state\":\"attached\",\"via\":\"%s\"", via_names[l->v[l->chosen].via]);
			if (l->reason[0]) { /* the preferred variant failed first */
				printf(",\"note\":");
				json_str(l->reason);
			}
		} else {
			printf("\"state\":\"%s\",\"reason\":", l->disabled ? "disabled" : "failed");
			json_str(l->reason[0] ? l->reason : "not attached");
		}
		printf("}");
	}
	printf("},\"issue_arg\":%d,\"polled_flag\":\"%s\",\"hybrid_poll_time\":%s,\"test_tgid\":%u,"
	       "\"calib_pct\":%u,\"sample\":%u,\"attempts\":%d,\"load_us\":%llu}\n",
	       issue_arg1, polled_flag_name(), has_member("io_ring_ctx", "hybrid_poll_time") ? "true" : "false",
	       opt.test_tgid, opt.calib_pct, opt.sample, attempts, (now_ns() - t0) / 1000);
	fflush(stdout);
}

/* ------------------------------------------------------------------------ request loop */

static void handle(struct hpoll *skel, char *line)
{
	char *id;

	line[strcspn(line, "\r")] = 0;
	if (!strcmp(line, "quit")) {
		stop = 1;
		return;
	}
	if (!strncmp(line, "snap", 4) && (line[4] == ' ' || !line[4])) {
		id = line[4] ? line + 5 : "";
		dump(skel, id);
		return;
	}
	if (!strncmp(line, "sample ", 7)) {
		char *end;
		unsigned long n = strtoul(line + 7, &end, 10);

		if (!*end && n >= 1 && n <= SAMPLE_MAX) {
			/* read by the next completion on each CPU; a sample already weighted keeps its weight */
			skel->data->sample_n = n;
			printf("{\"type\":\"sample\",\"n\":%lu}\n", n);
			fflush(stdout);
			return;
		}
	}
	printf("{\"type\":\"error\",\"msg\":");
	json_str("unknown request (expected \"snap <id>\", \"sample <1..65536>\" or \"quit\")");
	printf("}\n");
	fflush(stdout);
}

/* Re-attach the programs chosen at load after a SIGUSR1 detach; failures go to stderr. */
static void reattach(struct hpoll *skel)
{
	for (int i = 0; i < NPROGS; i++) {
		struct logical *l = &progs[i];
		struct bpf_program *p;

		if (l->chosen < 0 || l->link)
			continue;
		p = bpf_object__find_program_by_name(skel->obj, l->v[l->chosen].prog);
		l->link = p ? bpf_program__attach(p) : NULL;
		if (!l->link)
			fprintf(stderr, "hybridpoll-bpf: re-attach of %s failed: %s\n", l->name, strerror(errno));
	}
}

static sigset_t usr_unblocked;

static void apply_detach_request(struct hpoll *skel)
{
	static bool detached;

	if (want_detached == detached)
		return;
	detached = want_detached;
	if (detached)
		destroy_links();
	else
		reattach(skel);
	fprintf(stderr, "hybridpoll-bpf: programs %s\n", detached ? "detached (SIGUSR1)" : "attached (SIGUSR2)");
}

static void serve(struct hpoll *skel)
{
	char buf[REQ_MAX];
	size_t len = 0;
	bool skipping = false;
	struct pollfd pfd = { .fd = 0, .events = POLLIN };

	while (!stop) {
		ssize_t n;
		char *nl;

		/* SIGUSR1/2 are blocked except inside ppoll: none is missed between the check and the wait */
		apply_detach_request(skel);
		if (ppoll(&pfd, 1, NULL, &usr_unblocked) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		n = read(0, buf + len, sizeof(buf) - 1 - len);
		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			break; /* EOF: the exporter went away */
		}
		len += n;
		buf[len] = 0;
		while (!stop && (nl = memchr(buf, '\n', len))) {
			*nl = 0;
			if (!skipping)
				handle(skel, buf);
			skipping = false;
			len -= nl + 1 - buf;
			memmove(buf, nl + 1, len);
			buf[len] = 0;
		}
		if (len == sizeof(buf) - 1) {
			/* an oversized request: answer once, drop it up to its newline */
			printf("{\"type\":\"error\",\"msg\":\"request line too long\"}\n");
			fflush(stdout);
			skipping = true;
			len = 0;
		}
	}
}

/* ------------------------------------------------------------------------------- main */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: hybridpoll-bpf [options]\n"
		"  --force-tracepoint     do not use fentry/fexit; use the tracepoint-only poll path\n"
		"  --raw-tp               attach the raw_tp twins even where tp_btf works\n"
		"  --exclude PROG,...     do not load these programs (names as in the hello line)\n"
		"  --calib-pct N          found_slept threshold: N%% of the shortest found time (default 200)\n"
		"  --test-sleeper-tgid P  test mode: timed sleeps of process P count as hybrid sleeps (device 0:0)\n"
		"  --ring-key HEX32       key for ring ids (default: random per run)\n"
		"  --sysfs DIR            sysfs root, to drop devices that are gone (default /sys)\n"
		"  --sample N             time 1 in N completions (1..65536, default 1); counts stay exact\n"
		"  --task-slots N         per-task state slots, a power of two in 1..65536 (default 8192):\n"
		"                         tasks whose tids share a slot use a slower overflow map\n"
		"  -v, --verbose          libbpf messages on stderr (twice: debug)\n"
		"  --version, --help\n"
		"Protocol on stdin/stdout: see src/bpf/README.md. SIGUSR1 detaches the programs (loaded,\n"
		"maps kept), SIGUSR2 attaches them again.\n");
}

static void parse_args(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "force-tracepoint", no_argument, 0, 'F' },
		{ "exclude", required_argument, 0, 'x' },
		{ "raw-tp", no_argument, 0, 'r' },
		{ "calib-pct", required_argument, 0, 'c' },
		{ "test-sleeper-tgid", required_argument, 0, 'T' },
		{ "ring-key", required_argument, 0, 'k' },
		{ "sysfs", required_argument, 0, 's' },
		{ "sample", required_argument, 0, 'S' },
		{ "task-slots", required_argument, 0, 't' },
		{ "verbose", no_argument, 0, 'v' },
		{ "version", no_argument, 0, 'V' },
		{ "help", no_argument, 0, 'h' },
		{ 0 },
	};
	char *end;
	int c;

	if (getrandom(opt.ring_key, sizeof(opt.ring_key), 0) != sizeof(opt.ring_key))
		opt.ring_key[0] = now_ns(), opt.ring_key[1] = getpid();
	while ((c = getopt_long(argc, argv, "vh", lo, NULL)) != -1) {
		switch (c) {
		case 'F': opt.force_tracepoint = true; break;
		case 'x': opt.exclude = optarg; break;
		case 'r': opt.raw_tp = true; break;
		case 'c':
			opt.calib_pct = strtoul(optarg, &end, 10);
			if (*end || opt.calib_pct < 100 || opt.calib_pct > 10000)
				fatal("--calib-pct must be an integer in 100..10000");
			break;
		case 'T':
			opt.test_tgid = strtoul(optarg, &end, 10);
			if (*end || !opt.test_tgid)
				fatal("--test-sleeper-tgid must be a process id");
			break;
		case 'k':
			if (strlen(optarg) != 32 || sscanf(optarg, "%16llx%16llx", (unsigned long long *)&opt.ring_key[0],
							   (unsigned long long *)&opt.ring_key[1]) != 2)
				fatal("--ring-key must be 32 hex digits");
			break;
		case 's': opt.sysfs = optarg; break;
		case 'S':
			opt.sample = strtoul(optarg, &end, 10);
			if (*end || opt.sample < 1 || opt.sample > SAMPLE_MAX)
				fatal("--sample must be an integer in 1..65536");
			break;
		case 't':
			opt.task_slots = strtoul(optarg, &end, 10);
			if (*end || opt.task_slots < 1 || opt.task_slots > 65536 || (opt.task_slots & (opt.task_slots - 1)))
				fatal("--task-slots must be a power of two in 1..65536");
			break;
		case 'v': opt.verbose++; break;
		case 'V': printf("hybridpoll-bpf %s\n", HP_VERSION); exit(0);
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); exit(2);
		}
	}
	if (optind < argc) {
		usage(stderr);
		exit(2);
	}
}

int main(int argc, char **argv)
{
	unsigned long long t0 = now_ns();
	struct sigaction sa = { .sa_handler = on_signal };
	struct hpoll *skel = NULL;
	bool issue_arg1;
	int attempts, nargs;

	setvbuf(stdout, NULL, _IOFBF, 1 << 16);
	parse_args(argc, argv);
	/* no SA_RESTART: a signal must interrupt poll() and read() */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGPIPE, &sa, NULL);
	sa.sa_handler = on_detach_signal;
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	{
		sigset_t usr;

		sigemptyset(&usr);
		sigaddset(&usr, SIGUSR1);
		sigaddset(&usr, SIGUSR2);
		sigprocmask(SIG_BLOCK, &usr, &usr_unblocked);
	}
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	libbpf_set_print(libbpf_print);
	ncpu = libbpf_num_possible_cpus();
	if (ncpu <= 0)
		fatal("cannot count possible CPUs: %s", strerror(-ncpu));

	vmlinux = btf__load_vmlinux_btf();
	if (!vmlinux)
		fatal("no kernel BTF (/sys/kernel/btf/vmlinux): %s", strerror(errno));
	nargs = tp_nargs("block_rq_issue");
	issue_arg1 = nargs == 2; /* (q, rq) before 5.11, (rq) since */

	for (int i = 0; i < NPROGS; i++) {
		struct logical *l = &progs[i];
		const char *why;

		l->chosen = -1;
		if (opt.exclude && in_list(opt.exclude, l->name)) {
			l->disabled = true;
			snprintf(l->reason, sizeof(l->reason), "excluded by --exclude");
			continue;
		}
		if (l->poll_path && opt.force_tracepoint) {
			l->disabled = true;
			snprintf(l->reason, sizeof(l->reason), "tracepoint path forced (--force-tracepoint)");
			continue;
		}
		for (int j = 0; j < l->nv && l->chosen < 0; j++) {
			if (opt.raw_tp && l->v[j].via == VIA_TP_BTF) {
				snprintf(l->reason, sizeof(l->reason), "tp_btf: not tried (--raw-tp)");
				continue;
			}
			why = variant_problem(l, &l->v[j]);
			if (!why)
				l->chosen = j;
			else
				snprintf(l->reason, sizeof(l->reason), "%s: %s", via_names[l->v[j].via], why);
		}
	}
	if (!fentry_selected()) {
		const char *why = opt.force_tracepoint ? "tracepoint path forced (--force-tracepoint)"
						       : "fentry path incomplete: another poll program failed";

		for (int i = 0; i < NPROGS; i++)
			if (progs[i].poll_path && progs[i].chosen >= 0) {
				progs[i].chosen = -1;
				snprintf(progs[i].reason, sizeof(progs[i].reason), "%s", why);
			}
	}
	for (attempts = 1; attempts <= MAX_ATTEMPTS && !skel; attempts++)
		skel = attempt(issue_arg1);
	if (!skel)
		fatal("no working program set after %d attempts", MAX_ATTEMPTS);
	attempts--;

	hello(issue_arg1, attempts, t0);
	serve(skel);
	destroy_links();
	hpoll__destroy(skel);
	btf__free(vmlinux);
	return 0;
}

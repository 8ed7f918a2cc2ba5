// SPDX-License-Identifier: GPL-2.0
/*
 * hpsim: a null-style blk-mq device with poll queues whose service time is defined on the guest
 * clock (tools/hpsim/README.md). Each request gets a deadline = ktime_get_ns() at queue_rq + a
 * service time drawn from the device's profile. Requests on a poll queue (HCTX_TYPE_POLL) wait in
 * a deadline-ordered list that .poll drains up to "now"; requests on the interrupt queues complete
 * from a per-request absolute hrtimer at their deadline. So the device's time does not depend on
 * how it is polled. No data moves: a real device's DMA costs the CPU nothing, so neither may ours.
 *
 * Built for the VM lab's two guest kernels: 5.10 (bullseye) and 7.x (trixie-backports). The
 * blk-mq API differs between them; the versions in between are not supported (#error below).
 */
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/version.h>
#include <linux/blkdev.h>
#include <linux/blk-mq.h>
#include <linux/hrtimer.h>
#include <linux/ktime.h>
#include <linux/math64.h>
#include <linux/spinlock.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/atomic.h>

#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 11, 0)
#define HPSIM_NEW_API 1 /* queue_limits + features, blk_mq_alloc_disk(set, lim, data), .poll(hctx, iob) */
#elif LINUX_VERSION_CODE < KERNEL_VERSION(5, 14, 0)
#define HPSIM_NEW_API 0 /* blk_mq_init_queue_data + alloc_disk_node, int .poll(hctx) */
#else
#error "hpsim supports kernels 5.10 to 5.13 and 6.11 or later (the lab's guests are 5.10 and 7.x)"
#endif

#define HPSIM_MAX_DEVICES 16
#define HPSIM_MAX_NS 10000000000ULL /* 10 s: the largest time a profile may name */
#define HPSIM_NORMAL_MIN_NS 1000ULL /* normal draws are clamped to >= 1 us */
#define HPSIM_CAPACITY (4ULL << 30) /* bytes */
#define HPSIM_BLOCK 4096

static int nr_devices = 1;
module_param(nr_devices, int, 0444);
MODULE_PARM_DESC(nr_devices, "number of devices hpsim0..N-1 (1-16, default 1)");
static int submit_queues = 1;
module_param(submit_queues, int, 0444);
MODULE_PARM_DESC(submit_queues, "interrupt (default map) hardware queues per device (default 1)");
static int poll_queues = 1;
module_param(poll_queues, int, 0444);
MODULE_PARM_DESC(poll_queues, "poll hardware queues per device (default 1; 0: io_poll reads 0)");
static int queue_depth = 256;
module_param(queue_depth, int, 0444);
MODULE_PARM_DESC(queue_depth, "tags per hardware queue (default 256)");
static char *profiles = "fixed:50000";
module_param(profiles, charp, 0444);
MODULE_PARM_DESC(profiles, "';'-separated service-time profile per device, the last repeated (default fixed:50000)");
static ulong seed = 1;
module_param(seed, ulong, 0444);
MODULE_PARM_DESC(seed, "PRNG seed; device N starts from seed + N (default 1)");

enum hpsim_kind { HP_FIXED, HP_UNIFORM, HP_NORMAL, HP_TWOPOINT, HP_TAIL };

struct hpsim_profile {
	enum hpsim_kind kind;
	u64 a, b, c; /* by kind: T | LO HI | MEAN SD | A B PA | BASE MAX P */
};

struct hpsim_queue {
	spinlock_t lock;
	struct list_head pending; /* poll queues only: requests in deadline order */
};

struct hpsim_dev {
	int index;
	struct blk_mq_tag_set set;
	struct gendisk *disk;
	struct hpsim_queue *queues;

	spinlock_t lock; /* profile, PRNG and the issue-side stats: draws happen in issue order */
	struct hpsim_profile profile;
	u64 seed, rng;
	u64 issued, sum_ns, min_ns, max_ns;
	atomic64_t completed_irq, completed_poll;
};

struct hpsim_cmd {
	struct list_head node;
	struct hrtimer timer;
	u64 deadline;
};

static struct hpsim_dev *devices[HPSIM_MAX_DEVICES];
#if !HPSIM_NEW_API
static int hpsim_major;
#endif

/* ---- profiles and the PRNG ------------------------------------------------------------------ */

/* splitmix64: small, seedable, and good enough to draw service times from. */
static u64 hpsim_next(u64 *s)
{
	u64 z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* uniform in [0, n) without modulo bias worth the name (n <= 1e10 against 2^64) */
static u64 hpsim_below(u64 *s, u64 n)
{
	return mul_u64_u64_shr(hpsim_next(s), n, 64);
}

static u64 hpsim_draw(const struct hpsim_profile *p, u64 *s)
{
	s64 z = 0, v;
	int i;

	switch (p->kind) {
	case HP_FIXED:
		return p->a;
	case HP_UNIFORM:
		return p->a + hpsim_below(s, p->b - p->a + 1);
	case HP_NORMAL:
		/* Irwin-Hall: the sum of 12 uniforms minus 6 is N(0, 1) to within what a profile needs
		 * (no floating point in the kernel); z in units of 2^-16, |z| < 6 * 2^16. */
		for (i = 0; i < 12; i++)
			z += (s64)(hpsim_next(s) >> 48);
		z -= 6LL << 16;
		v = (s64)p->a + div_s64((s64)p->b * z, 1 << 16);
		return v < (s64)HPSIM_NORMAL_MIN_NS ? HPSIM_NORMAL_MIN_NS : (u64)v;
	case HP_TWOPOINT:
		return hpsim_below(s, 1000) < p->c ? p->a : p->b;
	case HP_TAIL:
		if (hpsim_below(s, 1000) >= p->c)
			return p->a;
		return p->a + 1 + hpsim_below(s, p->b - p->a);
	}
	return 0;
}

/* "kind:N[:N...]" with exactly the kind's number of fields; 0 or -EINVAL */
static int hpsim_parse(const char *text, struct hpsim_profile *p)
{
	static const struct {
		const char *name;
		enum hpsim_kind kind;
		int nargs;
	} kinds[] = {
		{ "fixed", HP_FIXED, 1 },     { "uniform", HP_UNIFORM, 2 }, { "normal", HP_NORMAL, 2 },
		{ "twopoint", HP_TWOPOINT, 3 }, { "tail", HP_TAIL, 3 },
	};
	char buf[96], *cur, *tok;
	u64 v[3];
	int i, k, n = 0;
	size_t len = strcspn(text, "\n");

	if (len == 0 || len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, text, len);
	buf[len] = '\0';
	cur = buf;
	tok = strsep(&cur, ":");
	for (k = 0; k < ARRAY_SIZE(kinds); k++)
		if (!strcmp(tok, kinds[k].name))
			break;
	if (k == ARRAY_SIZE(kinds))
		return -EINVAL;
	while ((tok = strsep(&cur, ":")) != NULL) {
		if (n == kinds[k].nargs || kstrtou64(tok, 10, &v[n]) || v[n] > HPSIM_MAX_NS)
			return -EINVAL;
		n++;
	}
	if (n != kinds[k].nargs)
		return -EINVAL;
	for (i = n; i < 3; i++)
		v[i] = 0;
	switch (kinds[k].kind) {
	case HP_UNIFORM:
		if (v[0] > v[1])
			return -EINVAL;
		break;
	case HP_TWOPOINT:
		if (v[2] > 1000)
			return -EINVAL;
		break;
	case HP_TAIL:
		if (v[1] <= v[0] || v[2] > 1000)
			return -EINVAL;
		break;
	default:
		break;
	}
	p->kind = kinds[k].kind;
	p->a = v[0];
	p->b = v[1];
	p->c = v[2];
	return 0;
}

static int hpsim_format(const struct hpsim_profile *p, char *buf)
{
	switch (p->kind) {
	case HP_FIXED:
		return sysfs_emit(buf, "fixed:%llu\n", p->a);
	case HP_UNIFORM:
		return sysfs_emit(buf, "uniform:%llu:%llu\n", p->a, p->b);
	case HP_NORMAL:
		return sysfs_emit(buf, "normal:%llu:%llu\n", p->a, p->b);
	case HP_TWOPOINT:
		return sysfs_emit(buf, "twopoint:%llu:%llu:%llu\n", p->a, p->b, p->c);
	case HP_TAIL:
		return sysfs_emit(buf, "tail:%llu:%llu:%llu\n", p->a, p->b, p->c);
	}
	return -EINVAL;
}

/* the i-th ';'-separated entry of profiles, the last one repeated for the rest */
static int hpsim_profile_param(int i, struct hpsim_profile *p)
{
	const char *s = profiles, *end;
	char one[96];
	int j;

	for (j = 0; j < i; j++) {
		end = strchr(s, ';');
		if (!end || end[1] == '\0')
			break;
		s = end + 1;
	}
	end = strchrnul(s, ';');
	if (end - s >= (long)sizeof(one))
		return -EINVAL;
	memcpy(one, s, end - s);
	one[end - s] = '\0';
	return hpsim_parse(one, p);
}

/* ---- sysfs: /sys/block/hpsimN/hpsim/{profile,seed,stats} ------------------------------------ */

static struct hpsim_dev *hpsim_of(struct device *dev)
{
	return dev_to_disk(dev)->private_data;
}

static ssize_t profile_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct hpsim_dev *d = hpsim_of(dev);
	struct hpsim_profile p;

	spin_lock_irq(&d->lock);
	p = d->profile;
	spin_unlock_irq(&d->lock);
	return hpsim_format(&p, buf);
}

static ssize_t profile_store(struct device *dev, struct device_attribute *attr, const char *buf, size_t count)
{
	struct hpsim_dev *d = hpsim_of(dev);
	struct hpsim_profile p;
	int err = hpsim_parse(buf, &p);

	if (err)
		return err;
	spin_lock_irq(&d->lock);
	d->profile = p;
	spin_unlock_irq(&d->lock);
	return count;
}

static ssize_t seed_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct hpsim_dev *d = hpsim_of(dev);
	u64 s;

	spin_lock_irq(&d->lock);
	s = d->seed;
	spin_unlock_irq(&d->lock);
	return sysfs_emit(buf, "%llu\n", s);
}

static ssize_t seed_store(struct device *dev, struct device_attribute *attr, const char *buf, size_t count)
{
	struct hpsim_dev *d = hpsim_of(dev);
	u64 s;
	int err = kstrtou64(buf, 10, &s);

	if (err)
		return err;
	spin_lock_irq(&d->lock);
	d->seed = d->rng = s;
	spin_unlock_irq(&d->lock);
	return count;
}

static ssize_t stats_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct hpsim_dev *d = hpsim_of(dev);
	u64 issued, sum, min, max;

	spin_lock_irq(&d->lock);
	issued = d->issued;
	sum = d->sum_ns;
	min = issued ? d->min_ns : 0;
	max = d->max_ns;
	spin_unlock_irq(&d->lock);
	return sysfs_emit(buf, "issued=%llu completed_irq=%lld completed_poll=%lld service_ns_sum=%llu service_ns_min=%llu service_ns_max=%llu\n",
			  issued, (long long)atomic64_read(&d->completed_irq), (long long)atomic64_read(&d->completed_poll),
			  sum, min, max);
}

static DEVICE_ATTR_RW(profile);
static DEVICE_ATTR_RW(seed);
static DEVICE_ATTR_RO(stats);

static struct attribute *hpsim_attrs[] = {
	&dev_attr_profile.attr,
	&dev_attr_seed.attr,
	&dev_attr_stats.attr,
	NULL,
};

static const struct attribute_group hpsim_group = {
	.name = "hpsim",
	.attrs = hpsim_attrs,
};

static const struct attribute_group *hpsim_groups[] = {
	&hpsim_group,
	NULL,
};

/* ---- blk-mq --------------------------------------------------------------------------------- */

static enum hrtimer_restart hpsim_timer_fn(struct hrtimer *t)
{
	struct hpsim_cmd *cmd = container_of(t, struct hpsim_cmd, timer);

	blk_mq_complete_request(blk_mq_rq_from_pdu(cmd));
	return HRTIMER_NORESTART;
}

static void hpsim_complete(struct request *rq)
{
	struct hpsim_dev *d = rq->q->queuedata;

	atomic64_inc(&d->completed_irq);
	blk_mq_end_request(rq, BLK_STS_OK);
}

static blk_status_t hpsim_queue_rq(struct blk_mq_hw_ctx *hctx, const struct blk_mq_queue_data *bd)
{
	struct request *rq = bd->rq;
	struct hpsim_cmd *cmd = blk_mq_rq_to_pdu(rq), *pos;
	struct hpsim_dev *d = hctx->queue->queuedata;
	struct hpsim_queue *hq = hctx->driver_data;
	unsigned long flags;
	u64 svc;

	blk_mq_start_request(rq);
	spin_lock_irqsave(&d->lock, flags);
	svc = hpsim_draw(&d->profile, &d->rng);
	cmd->deadline = ktime_get_ns() + svc;
	if (!d->issued || svc < d->min_ns)
		d->min_ns = svc;
	if (svc > d->max_ns)
		d->max_ns = svc;
	d->issued++;
	d->sum_ns += svc;
	spin_unlock_irqrestore(&d->lock, flags);

	/* hctx->type is set after .init_hctx, so the queue's kind is decided here */
	if (hctx->type == HCTX_TYPE_POLL) {
		/* in deadline order: from the tail, where a fixed profile always inserts */
		spin_lock(&hq->lock);
		list_for_each_entry_reverse(pos, &hq->pending, node)
			if (pos->deadline <= cmd->deadline)
				break;
		list_add(&cmd->node, &pos->node);
		spin_unlock(&hq->lock);
	} else {
		hrtimer_start(&cmd->timer, ns_to_ktime(cmd->deadline), HRTIMER_MODE_ABS);
	}
	return BLK_STS_OK;
}

/* Completes the requests of this poll queue whose deadline has passed; returns how many. */
#if HPSIM_NEW_API
static int hpsim_poll(struct blk_mq_hw_ctx *hctx, struct io_comp_batch *iob)
#else
static int hpsim_poll(struct blk_mq_hw_ctx *hctx)
#endif
{
	struct hpsim_queue *hq = hctx->driver_data;
	struct hpsim_dev *d = hctx->queue->queuedata;
	struct hpsim_cmd *cmd, *next;
	LIST_HEAD(done);
	u64 now = ktime_get_ns();
	int n = 0;

	spin_lock(&hq->lock);
	list_for_each_entry_safe(cmd, next, &hq->pending, node) {
		if (cmd->deadline > now)
			break;
		list_move_tail(&cmd->node, &done);
		n++;
	}
	spin_unlock(&hq->lock);
	if (!n)
		return 0;
	atomic64_add(n, &d->completed_poll);
	list_for_each_entry_safe(cmd, next, &done, node) {
		struct request *rq = blk_mq_rq_from_pdu(cmd);

		list_del(&cmd->node);
#if HPSIM_NEW_API
		blk_mq_set_request_complete(rq);
		if (!blk_mq_add_to_batch(rq, iob, false, blk_mq_end_request_batch))
			blk_mq_end_request(rq, BLK_STS_OK);
#else
		blk_mq_end_request(rq, BLK_STS_OK);
#endif
	}
	return n;
}

static int hpsim_init_hctx(struct blk_mq_hw_ctx *hctx, void *data, unsigned int idx)
{
	struct hpsim_dev *d = data;

	hctx->driver_data = &d->queues[idx];
	return 0;
}

#if HPSIM_NEW_API
static int hpsim_init_request(struct blk_mq_tag_set *set, struct request *rq, unsigned int hctx_idx, int numa_node)
#else
static int hpsim_init_request(struct blk_mq_tag_set *set, struct request *rq, unsigned int hctx_idx,
			      unsigned int numa_node)
#endif
{
	struct hpsim_cmd *cmd = blk_mq_rq_to_pdu(rq);

	INIT_LIST_HEAD(&cmd->node);
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 13, 0)
	hrtimer_setup(&cmd->timer, hpsim_timer_fn, CLOCK_MONOTONIC, HRTIMER_MODE_ABS);
#else
	hrtimer_init(&cmd->timer, CLOCK_MONOTONIC, HRTIMER_MODE_ABS);
	cmd->timer.function = hpsim_timer_fn;
#endif
	return 0;
}

/* Like nvme: the default map's queues first, no read map, then the poll map at the next offset. */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 2, 0)
static void hpsim_map_queues(struct blk_mq_tag_set *set)
#else
static int hpsim_map_queues(struct blk_mq_tag_set *set)
#endif
{
	unsigned int i, offset = 0;

	for (i = 0; i < set->nr_maps; i++) {
		struct blk_mq_queue_map *map = &set->map[i];

		map->nr_queues = i == HCTX_TYPE_DEFAULT ? submit_queues : i == HCTX_TYPE_POLL ? poll_queues : 0;
		map->queue_offset = offset;
		if (!map->nr_queues)
			continue;
		blk_mq_map_queues(map);
		offset += map->nr_queues;
	}
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 2, 0)
	return 0;
#endif
}

static const struct blk_mq_ops hpsim_mq_ops = {
	.queue_rq = hpsim_queue_rq,
	.complete = hpsim_complete,
	.poll = hpsim_poll,
	.init_hctx = hpsim_init_hctx,
	.init_request = hpsim_init_request,
	.map_queues = hpsim_map_queues,
};

static const struct block_device_operations hpsim_fops = {
	.owner = THIS_MODULE,
};

/* ---- devices -------------------------------------------------------------------------------- */

static void hpsim_free(struct hpsim_dev *d)
{
	if (d->disk) {
		del_gendisk(d->disk);
#if !HPSIM_NEW_API
		blk_cleanup_queue(d->disk->queue);
#endif
		put_disk(d->disk);
	}
	if (d->set.tags)
		blk_mq_free_tag_set(&d->set);
	kfree(d->queues);
	kfree(d);
}

static int hpsim_add(int index)
{
	struct hpsim_dev *d;
	struct gendisk *disk;
	unsigned int i, nr_hw = submit_queues + poll_queues;
	int err;

	d = kzalloc(sizeof(*d), GFP_KERNEL);
	if (!d)
		return -ENOMEM;
	d->index = index;
	spin_lock_init(&d->lock);
	atomic64_set(&d->completed_irq, 0);
	atomic64_set(&d->completed_poll, 0);
	d->seed = d->rng = seed + index;
	err = hpsim_profile_param(index, &d->profile);
	if (err) {
		pr_err("hpsim: bad profile for hpsim%d in profiles=%s\n", index, profiles);
		kfree(d);
		return err;
	}
	d->queues = kcalloc(nr_hw, sizeof(*d->queues), GFP_KERNEL);
	if (!d->queues) {
		kfree(d);
		return -ENOMEM;
	}
	for (i = 0; i < nr_hw; i++) {
		spin_lock_init(&d->queues[i].lock);
		INIT_LIST_HEAD(&d->queues[i].pending);
	}

	d->set.ops = &hpsim_mq_ops;
	d->set.nr_hw_queues = nr_hw;
	/* without a poll map the core leaves io_poll at 0 */
	d->set.nr_maps = poll_queues ? HCTX_MAX_TYPES : 1;
	d->set.queue_depth = queue_depth;
	d->set.numa_node = NUMA_NO_NODE;
	d->set.cmd_size = sizeof(struct hpsim_cmd);
	d->set.driver_data = d;
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 14, 0)
	d->set.flags = BLK_MQ_F_SHOULD_MERGE;
#endif
	err = blk_mq_alloc_tag_set(&d->set);
	if (err) {
		d->set.tags = NULL;
		goto fail;
	}

#if HPSIM_NEW_API
	{
		struct queue_limits lim = {
			.logical_block_size = HPSIM_BLOCK,
			.physical_block_size = HPSIM_BLOCK,
			.max_hw_sectors = 1024,
		};

		/* the core sets BLK_FEAT_POLL itself when the tag set has a poll map */
		disk = blk_mq_alloc_disk(&d->set, &lim, d);
	}
	if (IS_ERR(disk)) {
		err = PTR_ERR(disk);
		goto fail;
	}
	/* major 0 and no minors: add_disk gives an extended dev_t (259:N), as nvme namespaces get */
	disk->flags |= GENHD_FL_NO_PART;
#else
	{
		struct request_queue *q = blk_mq_init_queue_data(&d->set, d);

		if (IS_ERR(q)) {
			err = PTR_ERR(q);
			goto fail;
		}
		blk_queue_logical_block_size(q, HPSIM_BLOCK);
		blk_queue_physical_block_size(q, HPSIM_BLOCK);
		blk_queue_max_hw_sectors(q, 1024);
		blk_queue_flag_set(QUEUE_FLAG_NONROT, q);
		disk = alloc_disk_node(0, NUMA_NO_NODE);
		if (!disk) {
			blk_cleanup_queue(q);
			err = -ENOMEM;
			goto fail;
		}
		disk->queue = q;
		disk->major = hpsim_major;
		/* no minors: an extended dev_t (259:N), as nvme namespaces get */
		disk->flags |= GENHD_FL_EXT_DEVT | GENHD_FL_NO_PART_SCAN;
	}
#endif
	disk->fops = &hpsim_fops;
	disk->private_data = d;
	snprintf(disk->disk_name, DISK_NAME_LEN, "hpsim%d", index);
	set_capacity(disk, HPSIM_CAPACITY >> SECTOR_SHIFT);
#if HPSIM_NEW_API
	err = device_add_disk(NULL, disk, hpsim_groups);
	if (err) {
		put_disk(disk);
		goto fail;
	}
#else
	device_add_disk(NULL, disk, hpsim_groups);
#endif
	d->disk = disk;
	devices[index] = d;
	return 0;

fail:
	hpsim_free(d);
	return err;
}

static void hpsim_cleanup(void)
{
	int i;

	for (i = 0; i < HPSIM_MAX_DEVICES; i++) {
		if (devices[i])
			hpsim_free(devices[i]);
		devices[i] = NULL;
	}
#if !HPSIM_NEW_API
	if (hpsim_major > 0)
		unregister_blkdev(hpsim_major, "hpsim");
#endif
}

static int __init hpsim_init(void)
{
	int i, err;

	if (nr_devices < 1 || nr_devices > HPSIM_MAX_DEVICES || submit_queues < 1 || poll_queues < 0 ||
	    submit_queues + poll_queues > 64 || queue_depth < 1 || queue_depth > 4096) {
		pr_err("hpsim: nr_devices 1-16, submit_queues >= 1, poll_queues >= 0 (64 queues at most), queue_depth 1-4096\n");
		return -EINVAL;
	}
#if !HPSIM_NEW_API
	hpsim_major = register_blkdev(0, "hpsim");
	if (hpsim_major < 0)
		return hpsim_major;
#endif
	for (i = 0; i < nr_devices; i++) {
		err = hpsim_add(i);
		if (err) {
			hpsim_cleanup();
			return err;
		}
	}
	pr_info("hpsim: %d devices, %d interrupt + %d poll queues, depth %d, profiles %s, seed %lu\n", nr_devices,
		submit_queues, poll_queues, queue_depth, profiles, seed);
	return 0;
}

static void __exit hpsim_exit(void)
{
	hpsim_cleanup();
}

module_init(hpsim_init);
module_exit(hpsim_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("hpsim: blk-mq device with poll queues and a service time on the guest clock");

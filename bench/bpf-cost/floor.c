// SPDX-License-Identifier: GPL-2.0
/* Loads and attaches floor.bpf.c; prints "ready", then on each stdin line the two counters
 * as JSON; exits on stdin EOF or SIGTERM. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "floor.skel.h"

int main(void)
{
	struct floor *skel = floor__open_and_load();
	int ncpu = libbpf_num_possible_cpus();
	char line[64];

	if (!skel || floor__attach(skel)) {
		fprintf(stderr, "floor: load/attach failed\n");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		unsigned long long v[2] = { 0, 0 }, pc[ncpu];

		for (unsigned k = 0; k < 2; k++)
			if (!bpf_map_lookup_elem(bpf_map__fd(skel->maps.floor_ctr), &k, pc))
				for (int c = 0; c < ncpu; c++)
					v[k] += pc[c];
		printf("{\"issue\":%llu,\"complete\":%llu}\n", v[0], v[1]);
		fflush(stdout);
	}
	floor__destroy(skel);
	return 0;
}

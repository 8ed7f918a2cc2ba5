// SPDX-License-Identifier: GPL-2.0
/* Loads a BPF object, attaches every program, prints "ready", exits on stdin EOF (parts.sh). */
#include <stdio.h>
#include <bpf/libbpf.h>
int main(int c, char **v) {
	struct bpf_object *o = bpf_object__open_file(v[1], NULL); struct bpf_program *p;
	if (!o || bpf_object__load(o)) { fprintf(stderr, "load failed\n"); return 1; }
	bpf_object__for_each_program(p, o) if (!bpf_program__attach(p)) { fprintf(stderr, "attach %s failed\n", bpf_program__name(p)); return 1; }
	printf("ready\n"); fflush(stdout);
	char b[16]; while (fgets(b, sizeof b, stdin)) ;
	return 0;
}

#!/usr/bin/env bash
# Builds the BPF collector: vmlinux.h -> hpoll.bpf.o -> stripped object -> skeleton -> loader.
# Output: build/bpf/hybridpoll-bpf (statically linked when the static libraries allow it).
# Idempotent: a step runs only when its inputs are newer than its output.
#   BPF_VMLINUX_H=path   use this vmlinux.h instead of src/bpf/vmlinux.h or the running kernel's BTF
#   BPF_STATIC=0         link dynamically (libbpf1, libelf1, zlib1g at run time)
#   CLANG, BPFTOOL, CC   tool overrides
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
src="$root/src/bpf"
out="$root/build/bpf"
CLANG=${CLANG:-clang}
BPFTOOL=${BPFTOOL:-bpftool}
CC=${CC:-cc}

say() { printf 'build-bpf: %s\n' "$*"; }
die() { printf 'build-bpf: error: %s\n' "$*" >&2; exit 1; }
# newer OUT IN...: true when OUT is missing or older than any IN
stale() { local o=$1; shift; [ -e "$o" ] || return 0; for i in "$@"; do [ "$i" -nt "$o" ] && return 0; done; return 1; }

need_tool() { command -v "$1" >/dev/null 2>&1 || die "$1 not found: install the Debian package '$2' (apt-get install -y $2)"; }
need_file() { [ -e "$1" ] || die "$1 not found: install the Debian package '$2' (apt-get install -y $2)"; }

need_tool "$CLANG" clang
need_tool "$BPFTOOL" bpftool
need_tool "$CC" gcc
need_file /usr/include/bpf/libbpf.h libbpf-dev
need_file /usr/include/libelf.h libelf-dev
need_file /usr/include/zlib.h zlib1g-dev

clang_major=$("$CLANG" -dumpversion | cut -d. -f1)
[ "$clang_major" -ge 12 ] || die "clang $clang_major is too old for CO-RE (need >= 12): install a newer 'clang'"

case "$(uname -m)" in
  x86_64) arch=x86 ;;
  aarch64) arch=arm64 ;;
  s390x) arch=s390 ;;
  ppc64le) arch=powerpc ;;
  riscv64) arch=riscv ;;
  *) die "unsupported architecture $(uname -m)" ;;
esac

mkdir -p "$out"

# vmlinux.h: an explicit one, a shipped one, or generated from the running kernel's BTF.
vmlinux_h="$out/vmlinux.h"
if [ -n "${BPF_VMLINUX_H:-}" ]; then
  [ -r "$BPF_VMLINUX_H" ] || die "BPF_VMLINUX_H=$BPF_VMLINUX_H is not readable"
  if stale "$vmlinux_h" "$BPF_VMLINUX_H"; then say "vmlinux.h from $BPF_VMLINUX_H"; cp "$BPF_VMLINUX_H" "$vmlinux_h"; fi
elif [ -r "$src/vmlinux.h" ]; then
  if stale "$vmlinux_h" "$src/vmlinux.h"; then say "vmlinux.h shipped in src/bpf"; cp "$src/vmlinux.h" "$vmlinux_h"; fi
elif [ ! -s "$vmlinux_h" ]; then
  [ -r /sys/kernel/btf/vmlinux ] || die "no /sys/kernel/btf/vmlinux (kernel without CONFIG_DEBUG_INFO_BTF): put a vmlinux.h in src/bpf/ or set BPF_VMLINUX_H"
  say "vmlinux.h from /sys/kernel/btf/vmlinux"
  "$BPFTOOL" btf dump file /sys/kernel/btf/vmlinux format c > "$vmlinux_h.tmp"
  mv "$vmlinux_h.tmp" "$vmlinux_h"
else
  say "vmlinux.h up to date"
fi

obj="$out/hpoll.bpf.o"
if stale "$obj" "$src/hpoll.bpf.c" "$src/hpoll.h" "$vmlinux_h"; then
  say "clang $clang_major: hpoll.bpf.c -> hpoll.bpf.o"
  "$CLANG" -g -O2 -Wall -Werror -target bpf -D__TARGET_ARCH_$arch -I"$out" -I"$src" -c "$src/hpoll.bpf.c" -o "$obj.tmp"
  mv "$obj.tmp" "$obj"
fi

# bpftool gen object strips DWARF and keeps BTF/BTF.ext: a ~10x smaller skeleton
lo="$out/hpoll.lo"
skel="$out/hpoll.skel.h"
if stale "$skel" "$obj"; then
  say "bpftool: stripped object and skeleton"
  "$BPFTOOL" gen object "$lo" "$obj"
  "$BPFTOOL" gen skeleton "$lo" name hpoll > "$skel.tmp"
  mv "$skel.tmp" "$skel"
fi

bin="$out/hybridpoll-bpf"
version=$(sed -n 's/.*"version": *"\([^"]*\)".*/\1/p' "$root/package.json" | head -1)
if stale "$bin" "$src/loader.c" "$src/hpoll.h" "$skel"; then
  say "cc: loader.c -> loader.o"
  "$CC" -O2 -g -Wall -Wextra -Wno-unused-parameter -I"$out" -I"$src" -DHP_VERSION="\"$version\"" \
    -c "$src/loader.c" -o "$out/loader.o"
  if [ "${BPF_STATIC:-1}" != 0 ] && "$CC" -static -s -o "$bin.tmp" "$out/loader.o" -lbpf -lelf -lz -lzstd 2>"$out/static-link.log"; then
    say "linked statically (no run-time dependencies)"
  else
    [ "${BPF_STATIC:-1}" != 0 ] && say "static link failed (build/bpf/static-link.log; libzstd-dev provides libzstd.a): linking dynamically, the loader then needs libbpf1, libelf1 and zlib1g at run time"
    "$CC" -s -o "$bin.tmp" "$out/loader.o" -lbpf -lelf -lz
    say "linked dynamically"
  fi
  mv "$bin.tmp" "$bin"
fi
say "ok: $bin ($(du -k "$bin" | cut -f1) KiB)"

#!/bin/bash
# Where the completion program's nanoseconds go (root): parts.bpf.c's programs side by side in one
# fio QD32 run on a loop device, ns per run from kernel.bpf_stats_enabled=1 (restored afterwards).
#   sudo bash bench/bpf-cost/parts.sh [SECONDS]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); root=$here/../..; out=$root/build/bpf/parts; secs=${1:-4}
bash "$root/scripts/build-bpf.sh" >/dev/null
mkdir -p "$out"
clang -O2 -g -target bpf -D__TARGET_ARCH_x86 -I"$root/build/bpf" -I"$root/src/bpf" -c "$here/parts.bpf.c" -o "$out/parts.o"
cc -O2 -o "$out/parts" "$here/parts.c" -lbpf -lelf -lz
dir=$(mktemp -d /tmp/hp-parts-XXXXXX)
dd if=/dev/urandom of="$dir/backing.img" bs=1M count=256 status=none
dev=$(losetup -f --show --direct-io=on "$dir/backing.img")
old=$(cat /proc/sys/kernel/bpf_stats_enabled)
cleanup() { sysctl -q kernel.bpf_stats_enabled="$old"; losetup -d "$dev"; rm -rf "$dir"; }
trap cleanup EXIT
sysctl -q kernel.bpf_stats_enabled=1
coproc P { "$out/parts" "$out/parts.o"; }
read -r _ <&"${P[0]}"
bpftool prog show -j > "$dir/before.json"
fio --name=parts --filename="$dev" --ioengine=io_uring --direct=1 --rw=randread --bs=4k --iodepth=32 --runtime="$secs" --time_based --output-format=terse >/dev/null
bpftool prog show -j > "$dir/after.json"
exec {P[1]}>&-
wait "$P_PID" || true
node -e '
const fs = require("fs"), [b, a] = process.argv.slice(1).map((f) => JSON.parse(fs.readFileSync(f)));
const before = new Map(b.map((p) => [p.id, p]));
for (const p of a) {
  const o = before.get(p.id);
  if (!o || !/^e\d_/.test(p.name)) continue;
  const n = p.run_cnt - (o.run_cnt ?? 0), t = p.run_time_ns - (o.run_time_ns ?? 0);
  console.log(`${p.name}: ${(t / n).toFixed(1)} ns per run (${n} runs)`);
}' "$dir/before.json" "$dir/after.json"

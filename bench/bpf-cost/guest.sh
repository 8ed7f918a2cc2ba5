#!/bin/bash
# What the loader's programs cost per polled I/O against the floor's pair, in the 7.3 guest in
# virtual time (QEMU icount: one instruction = 1 ns, so the figures do not move with host load) on
# the simulated 50 µs device, classic and hybrid polling, QD1 and QD32, fentry and tracepoint
# paths (root; the VM lab's images, built on first use). The floor (floor.bpf.c, linked statically)
# goes onto the project disk as a loader variant; test/vm/guest/loader-ab.mjs runs each path's
# loader and the floor side by side with kernel.bpf_stats_enabled=1 (and, before that, one A/B
# round of untraced against traced runs, whose IOPS change it prints as "summary").
#   sudo bash bench/bpf-cost/guest.sh [QDS (default "1 32")] [STATS_SECONDS (default 2)]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); root=$here/../..; out=$root/build/bpf/floor-static
qds=${1:-1 32}; secs=${2:-2}
bash "$root/scripts/build-bpf.sh" >/dev/null
(cd "$root" && npx tsc -p tsconfig.json)
bash "$here/build-floor.sh" "$out" --static
# the lab puts every file of the variants folder onto the project disk: the binary alone
install -D -m755 "$out/floor" "$out/variants/floor"
script=""
for qd in $qds; do
  script+="node /opt/hp/guest/loader-ab.mjs --loaders fentry=/opt/hp/bin/hybridpoll-bpf,tracepoint=/opt/hp/bin/hybridpoll-bpf+--force-tracepoint"
  script+=" --device hpsim0 --modes hybrid,poll --qd $qd --secs 1 --rounds 1 --stats-secs $secs --floor /opt/hp/bin/variants/floor | sed 's/^/qd$qd /';"
done
cd "$root"
HPVM_LOADER_VARIANTS=$out/variants npx tsx test/vm/lab.ts exec "$script" | node -e '
const rows = require("fs").readFileSync(0, "utf8").split("\n").filter((l) => /^qd\d+ \{"type":"stats"/.test(l));
console.log("| QD | polling | path | programs, ns per I/O | against the floor pair | issue + complete, ns per run | against the floor pair | per program, ns per I/O |");
console.log("|---|---|---|---|---|---|---|---|");
for (const line of rows) {
  const qd = line.slice(2, line.indexOf(" "));
  const s = JSON.parse(line.slice(line.indexOf(" ") + 1));
  const pair = s.progs.hp_rq_issue.nsPerRun + s.progs.hp_rq_done.nsPerRun;
  const each = Object.entries(s.progs).filter(([, v]) => v.nsPerIo > 0).map(([k, v]) => `${k.replace("hp_", "")} ${v.nsPerIo}`).join(", ");
  console.log(`| ${qd} | ${s.mode === "poll" ? "classic" : "hybrid"} | ${s.cfg} | ${s.nsPerIo} | ×${s.againstFloorPair} (floor ${s.floorPairNs}) | ${pair} | ×${(pair / s.floorPairNs).toFixed(2)} | ${each} |`);
}'

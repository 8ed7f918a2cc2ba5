#!/usr/bin/env bash
# Performs the Dockerfile's steps without Docker (this machine has no container engine), into a
# staging directory, then smoke-runs the staged exporter. CI runs it through
# test/bundle/container.test.ts, so the image recipe cannot rot unseen. Each "step NAME" below is
# a "# step: NAME" of the Dockerfile, in the same order (the test checks).
#   STAGE=dir   staging directory (default build/container; emptied first)
#   BPF_VMLINUX_H=path   passed to scripts/build-bpf.sh, as the Dockerfile's build argument
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
stage=${STAGE:-$root/build/container}
say() { printf 'container-build: %s\n' "$*" >&2; }
die() { printf 'container-build: error: %s\n' "$*" >&2; exit 1; }
step() { say "step: $1"; }

case "$stage" in /|"$root"|"$HOME") die "refusing STAGE=$stage" ;; esac
rm -rf "$stage"
mkdir -p "$stage/build" "$stage/deps" "$stage/app"

step toolchain
# The Dockerfile apt-installs these; here scripts/setup.sh did. Check them, as build-bpf.sh does.
for t in clang bpftool gcc node npm; do command -v "$t" >/dev/null || die "$t not found (run scripts/setup.sh)"; done

step npm-ci
cp "$root/package.json" "$root/package-lock.json" "$stage/build/"
(cd "$stage/build" && npm ci --no-audit --no-fund --loglevel=error >&2)

step tsc
cp "$root/tsconfig.json" "$stage/build/"
cp -r "$root/src" "$stage/build/src"
(cd "$stage/build" && npx tsc -p tsconfig.json)

step build-bpf
cp -r "$root/scripts" "$stage/build/scripts"
(cd "$stage/build" && BPF_VMLINUX_H="${BPF_VMLINUX_H:-}" bash scripts/build-bpf.sh >&2)

step npm-ci-production
cp "$root/package.json" "$root/package-lock.json" "$stage/deps/"
(cd "$stage/deps" && npm ci --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error >&2)

step assemble
app="$stage/app"
cp -r "$stage/deps/node_modules" "$app/node_modules"
cp -r "$stage/build/dist" "$app/dist"
mkdir -p "$app/build/bpf"
cp "$stage/build/build/bpf/hybridpoll-bpf" "$app/build/bpf/hybridpoll-bpf"
cp "$root/package.json" "$app/"
cp -r "$root/recordings" "$app/recordings"
say "staged image tree: $app ($(du -sk "$app" | cut -f1) KiB)"

step smoke
# Only production dependencies: a module that the build needed but the runtime lacks fails here.
node "$app/dist/cli.js" --help >/dev/null
"$app/build/bpf/hybridpoll-bpf" --version >&2
if ldd "$app/build/bpf/hybridpoll-bpf" >/dev/null 2>&1; then
  say "note: the loader is dynamically linked; the slim runtime image would need libbpf1, libelf1 and zlib1g"
fi
port=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
log="$stage/smoke.log"
# --speed 10: the model needs two frames (5 s apart in the recording) before it reports.
(cd "$app" && exec node dist/cli.js replay recordings/synthetic.jsonl --speed 10 --web.listen-address "127.0.0.1:$port") >"$log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true' EXIT
# What the Dockerfile's HEALTHCHECK runs, against the staged exporter.
ok=
for _ in $(seq 1 50); do
  if node -e "fetch('http://127.0.0.1:$port/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"; then ok=1; break; fi
  kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; die "the staged exporter exited"; }
  sleep 0.2
done
[ -n "$ok" ] || { cat "$log" >&2; die "no /healthz answer within 10 s"; }
# Host, BPF and model families, scraped until the model has its first window (10 s at most).
want="hybridpoll_build_info hybridpoll_io_latency_seconds_bucket hybridpoll_wasted_cpu_seconds_total"
for _ in $(seq 1 20); do
  metrics=$(node -e "fetch('http://127.0.0.1:$port/metrics').then((r) => r.text()).then((t) => process.stdout.write(t))")
  missing=
  for m in $want; do grep -q "^$m" <<<"$metrics" || missing="$missing $m"; done
  [ -z "$missing" ] && break
  sleep 0.5
done
[ -z "$missing" ] || { cat "$log" >&2; die "staged exporter's /metrics lacks$missing"; }
say "ok: staged exporter answered /healthz and served $(grep -vc '^#' <<<"$metrics") samples from replay"

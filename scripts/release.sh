#!/usr/bin/env bash
# The release for plain hosts, node_exporter style: hybridpoll-exporter-<version>.linux-amd64.tar.gz
# holding one executable (a Node 20 single executable application: this Node's binary with the
# bundled dist/ and production dependencies injected by postject), the static BPF loader, a systemd
# unit, an example flags file and the synthetic recording. Run by `npm run release`; tested by
# test/release/release.test.ts in a fresh Debian root without Node.
#   OUT=dir    where the tarball goes (default build/release)
#   NODE_BIN   the node binary to turn into the executable (default: the node running npm, >= 20.19)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$root/build/release}
node_bin=${NODE_BIN:-$(command -v node)}
say() { printf 'release: %s\n' "$*" >&2; }
die() { printf 'release: error: %s\n' "$*" >&2; exit 1; }

[ "$(uname -m)" = x86_64 ] || die "builds linux-amd64 only (this is $(uname -m))"
version=$(node -p 'require(process.argv[1]).version' "$root/package.json")
name=hybridpoll-exporter-$version.linux-amd64
# The SEA fuse Node's own binary carries (node/src/node_sea.cc): postject flips it.
fuse=NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2
grep -qa "$fuse" "$node_bin" || die "$node_bin has no single-executable fuse (need an official Node >= 20 build)"

work=$(mktemp -d "${TMPDIR:-/tmp}/hybridpoll-release.XXXXXX")
trap 'rm -rf "$work"' EXIT
pkg=$work/$name
mkdir -p "$pkg/build/bpf" "$pkg/recordings"

# Its own dist/ (from src/ as it is now), not the worktree's, which tests rewrite meanwhile.
say "tsc and the BPF loader"
(cd "$root" && npx tsc -p tsconfig.json --outDir "$work/dist" --sourceMap false && bash scripts/build-bpf.sh >&2)
loader=$root/build/bpf/hybridpoll-bpf
! ldd "$loader" >/dev/null 2>&1 || die "$loader is not statically linked: the release runs on hosts without libbpf"

say "bundle dist/cli.js and its dependencies (esbuild, CommonJS)"
node "$root/scripts/release-bundle.mjs" "$work/dist" "$work/bundle.cjs"
cat >"$work/sea.json" <<EOF
{ "main": "$work/bundle.cjs", "output": "$work/sea.blob", "disableExperimentalSEAWarning": true, "useCodeCache": true }
EOF
(cd "$work" && "$node_bin" --experimental-sea-config sea.json >&2)
# Stripped before injection (symbols only: 14 MiB of the 100); postject adds the blob as an ELF note.
cp "$node_bin" "$pkg/hybridpoll-exporter"
strip "$pkg/hybridpoll-exporter"
"$root/node_modules/.bin/postject" "$pkg/hybridpoll-exporter" NODE_SEA_BLOB "$work/sea.blob" \
  --sentinel-fuse "$fuse" >"$work/postject.log" 2>&1 || { cat "$work/postject.log" >&2; die "postject failed"; }

# The package layout the executable looks in (scripts/release-bundle.mjs): its version, the
# loader at the default --bpf.loader, the recording `replay` serves by default.
node -e 'const p=require(process.argv[1]);process.stdout.write(JSON.stringify({name:p.name,version:p.version,license:p.license})+"\n")' \
  "$root/package.json" >"$pkg/package.json"
cp "$loader" "$pkg/build/bpf/hybridpoll-bpf"
cp "$root/recordings/synthetic.jsonl" "$pkg/recordings/"
cp "$root/deploy/systemd/hybridpoll-exporter.service" "$root/deploy/systemd/hybridpoll-exporter.default" "$pkg/"
cp "$root/deploy/systemd/README.md" "$pkg/README.md"

got=$("$pkg/hybridpoll-exporter" --version)
[ "$got" = "$version" ] || die "the executable says version '$got', expected $version"

mkdir -p "$out"
tar -C "$work" --owner=0 --group=0 --numeric-owner --sort=name -czf "$out/$name.tar.gz.part" "$name"
mv "$out/$name.tar.gz.part" "$out/$name.tar.gz"
(cd "$out" && sha256sum "$name.tar.gz" >"$name.tar.gz.sha256")
say "built $out/$name.tar.gz ($(($(stat -c %s "$out/$name.tar.gz") / 1024 / 1024)) MiB; executable $(($(stat -c %s "$pkg/hybridpoll-exporter") / 1024 / 1024)) MiB)"
echo "$out/$name.tar.gz"

# hybridpoll-exporter container image. Multi-stage: build the TypeScript and the BPF loader with the
# full toolchain, install production dependencies apart, and ship a slim runtime with only
# node, dist/, the production node_modules, the static BPF loader and the synthetic recording.
#   docker build -t hybridpoll-exporter:0.1.0 .
#   docker build --build-arg BPF_VMLINUX_H=src/bpf/vmlinux.h ...   (builder without kernel BTF)
# scripts/container-build.sh builds this file with buildah (bases made locally, passed as
# BUILD_IMAGE and RUNTIME_IMAGE: no registry is reachable there) and runs the image with the
# DaemonSet's capabilities and mounts; test/bundle/container.test.ts runs it in CI.
ARG BUILD_IMAGE=node:20-bookworm
ARG RUNTIME_IMAGE=node:20-bookworm-slim

FROM ${BUILD_IMAGE} AS build
# The BPF build dependencies of scripts/apt-packages.txt
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      clang llvm libbpf-dev libelf-dev zlib1g-dev libzstd-dev bpftool make gcc libc6-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# all dependencies, to compile
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
# dist/
COPY tsconfig.json ./
COPY src ./src
RUN npx tsc -p tsconfig.json
# build/bpf/hybridpoll-bpf, statically linked
COPY scripts ./scripts
ARG BPF_VMLINUX_H=
RUN BPF_VMLINUX_H="${BPF_VMLINUX_H}" bash scripts/build-bpf.sh

FROM ${BUILD_IMAGE} AS deps
WORKDIR /src
# runtime dependencies only
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund

FROM ${RUNTIME_IMAGE}
LABEL org.opencontainers.image.title="hybridpoll-exporter" \
      org.opencontainers.image.description="Prometheus exporter for NVMe hybrid polling" \
      org.opencontainers.image.licenses="Apache-2.0"
# the package layout, so the exporter finds build/bpf/hybridpoll-bpf next to dist/
WORKDIR /opt/hybridpoll-exporter
COPY --from=deps /src/node_modules ./node_modules
COPY --from=build /src/dist ./dist
COPY --from=build /src/build/bpf/hybridpoll-bpf ./build/bpf/hybridpoll-bpf
COPY package.json ./
COPY recordings ./recordings
ENV NODE_ENV=production
EXPOSE 9742
# Root, deliberately: reading debugfs (mode 0700) needs uid 0, and Kubernetes and Docker hand
# added capabilities (CAP_BPF, CAP_PERFMON) to uid 0 only. Run it with every other capability
# dropped (docker run --cap-drop ALL --cap-add BPF --cap-add PERFMON, or the DaemonSet in
# deploy/kubernetes). Without them the exporter still serves sysfs metrics; `replay` needs none.
USER 0:0
# the image answers on /healthz (with node: the slim image has no curl)
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:9742/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["node", "/opt/hybridpoll-exporter/dist/cli.js"]
CMD ["serve"]

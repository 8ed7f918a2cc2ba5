#!/bin/sh
# Runs in the guest from the project disk (see lab-init): network, limits, devices, then the control
# agent. The agent serves the host through a hostfwd port until the host asks it to power off.
ulimit -l unlimited
# Work beside a measured run slows the poller's virtual clock (both vCPUs advance one instruction
# counter): one CI boot had khugepaged running 28 % of a scraped QD1 run. Transparent huge pages
# and proactive compaction are off, so khugepaged and kcompactd stay asleep.
for f in /sys/kernel/mm/transparent_hugepage/enabled /sys/kernel/mm/transparent_hugepage/defrag; do
  [ -w "$f" ] && echo never >"$f"
done
[ -w /proc/sys/vm/compaction_proactiveness ] && echo 0 >/proc/sys/vm/compaction_proactiveness
modprobe virtio_net 2>/dev/null
ip link set lo up
ip link set eth0 up
ip addr add 10.0.2.15/24 dev eth0
ip route add default via 10.0.2.2
# The simulated poll-queue device (tools/hpsim), when the project disk has it for this kernel.
# hpvm.hpsim=<base64 of the insmod parameters> on the kernel command line (test/vm/lib/guest.ts).
if [ -f /opt/hp/modules/hpsim.ko ]; then
  if grep -q 'hpvm\.hpsim=' /proc/cmdline; then
    params=$(sed -n 's/.*hpvm\.hpsim=\([^ ]*\).*/\1/p' /proc/cmdline | base64 -d)
  else
    params='nr_devices=2 poll_queues=1 profiles=fixed:50000'
  fi
  # shellcheck disable=SC2086 # the parameters are words
  if insmod /opt/hp/modules/hpsim.ko $params; then
    echo "HPVM: hpsim loaded ($params): $(ls /sys/block | grep '^hpsim' | tr '\n' ' ')"
  else
    echo "HPVM: hpsim insmod failed ($params)"
  fi
fi
# nvme is a module in Debian's kernel: it takes nvme.poll_queues from the kernel command line.
# Wait for its namespaces only when the boot has NVMe controllers (PCI class 0x0108xx). Under
# virtual time (icount, sleep=off) an idle guest's sleep costs no wall time while QEMU's side
# may still be busy, so the bound is generous in guest time: 600 x 0.1 s.
nctrl=$(cat /sys/bus/pci/devices/*/class 2>/dev/null | grep -c '^0x0108')
if [ "$nctrl" -gt 0 ] && modprobe nvme; then
  for i in $(seq 600); do [ "$(ls /sys/block | grep -c '^nvme')" -ge "$nctrl" ] && break; sleep 0.1; done
fi
echo "HPVM: kernel $(uname -r), $(nproc) cpus, $nctrl NVMe controllers ($(ls /sys/block | grep -c '^nvme') namespaces), $(grep -o 'nvme.poll_queues=[0-9]*' /proc/cmdline)"
dmesg | grep -E 'nvme nvme[0-9]+: .*queues' | sed 's/^/HPVM: /'
# hpvm.run=<base64 of a gzipped shell script> (test/vm/lab.ts exec): run it instead of the agent,
# then power off.
run=$(sed -n 's/.*hpvm\.run=\([^ ]*\).*/\1/p' /proc/cmdline)
if [ -n "$run" ]; then
  echo "$run" | base64 -d | gzip -dc > /tmp/hp-run.sh
  echo "HPVM: exec begin"
  sh /tmp/hp-run.sh 2>&1
  echo "HPVM: exec end rc=$?"
  exit 0
fi
# The project disk carries its own node when the guest's Debian has none new enough (bullseye).
NODE=node; [ -x /opt/hp/bin/node ] && NODE=/opt/hp/bin/node
# No background V8 threads and no memory reducer (a GC timed some seconds after the last
# allocation): under icount the agent's GC work landing in a measured run slows the poller's clock.
# --expose-gc: /settle collects before a run, so that no collection is due during it.
exec $NODE --single-threaded --no-memory-reducer --expose-gc /opt/hp/guest/agent.mjs

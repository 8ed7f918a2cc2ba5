#!/bin/sh
# Runs in the guest from the project disk (see lab-init): network, limits, then the control agent.
# The agent serves the host through a hostfwd port until the host asks it to power off.
ulimit -l unlimited
modprobe virtio_net 2>/dev/null
ip link set lo up
ip link set eth0 up
ip addr add 10.0.2.15/24 dev eth0
ip route add default via 10.0.2.2
# nvme is a module in Debian's kernel: it takes nvme.poll_queues from the kernel command line.
modprobe nvme
for i in $(seq 100); do ls /sys/block | grep -q '^nvme' && break; sleep 0.1; done
echo "HPVM: kernel $(uname -r), $(nproc) cpus, $(grep -o 'nvme.poll_queues=[0-9]*' /proc/cmdline)"
dmesg | grep -E 'nvme nvme[0-9]+: .*queues' | sed 's/^/HPVM: /'
# hpvm.run=<base64 shell script> (test/vm/lab.ts exec): run it instead of the agent, then power off.
run=$(sed -n 's/.*hpvm\.run=\([^ ]*\).*/\1/p' /proc/cmdline)
if [ -n "$run" ]; then
  echo "$run" | base64 -d > /tmp/hp-run.sh
  echo "HPVM: exec begin"
  sh /tmp/hp-run.sh 2>&1
  echo "HPVM: exec end rc=$?"
  exit 0
fi
# The project disk carries its own node when the guest's Debian has none new enough (bullseye).
NODE=node; [ -x /opt/hp/bin/node ] && NODE=/opt/hp/bin/node
exec $NODE /opt/hp/guest/agent.mjs

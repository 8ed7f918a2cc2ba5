#!/bin/sh
# Guest-side probe of hpsim (see "Probe" in README.md; kept short: it travels on the kernel command line).
B=/sys/block/hpsim0 D=/sys/kernel/debug/block/hpsim0 T=/sys/kernel/tracing
E=$T/events/block
# 5.x: "hyb" = IOPOLL with io_poll_delay=0 (7.x has a poll_stat file too, and ignores the delay)
case $(uname -r) in 5.*) MODES='irq poll hyb' L=1;; *) MODES='irq poll hybrid' L=;; esac
echo "$(uname -r) nproc=$(nproc) io_poll=$(cat $B/queue/io_poll) io_poll_delay=$(cat $B/queue/io_poll_delay) dev=$(cat $B/dev)"
for h in $D/hctx*; do echo "${h##*/} $(cat $h/type) $(cat $h/io_poll 2>/dev/null | tr '\n' ' ')"; done
echo x86-tsc >$T/trace_clock
lat() { awk '{for(i=1;i<=NF;i++){if($i~/^[0-9]+:$/)t=$i+0;if($i=="+")s=$(i-1)}if(/rq_issue/)a[s]=t;else if(s in a){print t-a[s];delete a[s]}}' $T/trace; }
traced() { # DEVNUM HPDRIVE-ARGS...
  echo "dev==$1" >$E/filter; shift
  echo >$T/trace; echo 1 >$E/block_rq_issue/enable; echo 1 >$E/block_rq_complete/enable
  /opt/hp/bin/hpdrive "$@" | sed 's/.*\("lat_us":{[^}]*}\).*\("per_io_us":[0-9.]*\).*/\1 \2/'
  echo 0 >$E/enable
}
for m in $MODES; do
  [ $m = hyb ] && echo 0 >$B/queue/io_poll_delay && m=poll
  echo "== hpsim0 $(cat $B/hpsim/profile) mode $m (io_poll_delay $(cat $B/queue/io_poll_delay))"
  traced 271581184 -m $m -q 1 -n 2000 /dev/hpsim0
  cat $B/hpsim/stats
  lat | sort -n | awk '{v[NR]=$1}END{print "issue->complete ns: n="NR" p10="v[int(NR*.1)]" p50="v[int(NR/2)]" p90="v[int(NR*.9)]}'
done
[ -n "$L" ] && grep 4096 $D/poll_stat && cat $D/hctx1/io_poll
S=/sys/block/hpsim1/hpsim
echo twopoint:20000:100000:500 >$S/profile
for m in irq poll irq; do
  echo 2 >$S/seed
  traced 271581185 -m $m -q 1 -n 1000 /dev/hpsim1 >/dev/null
  echo "== hpsim1 $(cat $S/profile) seed 2 mode $m: $(cat $S/stats)"
  lat | head -48 | awk '{printf "%d ", $1/1000}'; echo
done

// Cost of the efficiency model per snapshot: EfficiencyModel.update over the frames of a recording
// (default: the shipped synthetic one), timed per call. Median, p90 and max over all frames after
// the first (which has no window yet).
//   npx tsx bench/model-cost.ts [recording.jsonl] [passes]
// Measured (2-vCPU dev VM shared with other jobs, Node 20.20, shipped recording, 2 devices, 3 runs):
//   median 0.94–1.08 ms per update, p90 25–27 ms, max 97–158 ms. The tail tracks GC and the other
//   jobs on the machine, not the data (the slow frames hold the same 8–10 buckets as the fast ones).
import { EfficiencyModel } from '../src/model/index.js';
import { openRecording } from '../src/record/reader.js';
import { SYNTHETIC_RECORDING } from '../src/record/shipped.js';
import type { Snapshot } from '../src/snapshot/types.js';

const file = process.argv[2] ?? SYNTHETIC_RECORDING;
const passes = Number(process.argv[3] ?? 3);
const frames: Snapshot[] = [];
for await (const f of (await openRecording(file)).frames) frames.push({ ...f, pollStatAges: [], hctxTotals: [] });

const times: number[] = [];
let targets = 0;
for (let p = 0; p < passes; p++) {
  const model = new EfficiencyModel({ windowSeconds: 60, latencyBudget: 0.01 });
  frames.forEach((f, i) => {
    const t0 = performance.now();
    const r = model.update(f);
    const dt = performance.now() - t0;
    if (i > 0) times.push(dt);
    targets += r.targets.length;
  });
}
times.sort((a, b) => a - b);
const q = (x: number) => times[Math.min(times.length - 1, Math.floor(x * times.length))]!.toFixed(2);
console.log(`${file}: ${frames.length} frames x ${passes} passes, ${(targets / (passes * frames.length)).toFixed(2)} devices analysed per frame`);
console.log(`update() ms: median ${q(0.5)}  p90 ${q(0.9)}  max ${times[times.length - 1]!.toFixed(2)}`);

// The report the tests look at: the first 10 minutes of the shipped synthetic recording (nvme0n1
// reads 4 KiB there, D ~ 10 µs), read through the real reader.
import { SYNTHETIC_RECORDING } from '../../src/record/shipped.js';
import { openRecording } from '../../src/record/reader.js';
import { buildReport, type Report } from '../../src/report/data.js';
import type { SnapshotInputs } from '../../src/snapshot/types.js';

export async function firstPhase(): Promise<Report> {
  const r = await openRecording(SYNTHETIC_RECORDING);
  const frames: SnapshotInputs[] = [];
  for await (const f of r.frames) if (frames.push(f) > 120) break;
  await r.frames.return(undefined);
  return buildReport(frames[0]!, frames[120]!, {
    latencyBudget: 0.01,
    source: { kind: 'recording', file: 'recordings/synthetic.jsonl', header: r.header },
    host: r.header.host,
    generatedAtMs: Date.UTC(2026, 0, 5, 10),
  });
}

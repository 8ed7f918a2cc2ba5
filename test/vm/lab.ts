// The VM lab by hand (the suite itself is npm run test:vm):
//   npx tsx test/vm/lab.ts build              build the exporter, loader and guest images (cached)
//   npx tsx test/vm/lab.ts run                build, boot, run every workload, print the checks table
//   npx tsx test/vm/lab.ts table [session]    the checks table of a saved session (default: the latest)
//   npx tsx test/vm/lab.ts exec 'sh script'   boot, run a short script in the guest instead of the agent
//   npx tsx test/vm/lab.ts record             boot, record hybrid and classic runs into recordings/vm-*.jsonl
//   npx tsx test/vm/lab.ts compare A B        determinism: the figures of two saved sessions side by side
// HPVM_SUITE=bullseye picks the legacy guest (issue 8: kernel 5.10, block-layer hybrid polling):
// run and table then show its session (results/latest-bullseye.json), record writes vm-legacy.jsonl.
// HPVM_SAMPLING=only runs the sampling check alone (test/vm/lib/sampling.ts).
// Env: HPVM_SUITE, HPVM_PROFILE, HPVM_IOS, HPVM_REPS, HPVM_AB_PAIRS, HPVM_SCENARIOS, HPVM_SAMPLING, HPVM_LEGACY_SECS, HPVM_LEGACY_WORKLOADS,
// HPVM_ACCEL, HPVM_CACHE (see docs/validation.md).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { accelFacts, chooseAccel } from './lib/accel.js';
import { allChecks, bpfCost, convergence, tracepointCpu } from './lib/checks.js';
import { compareSessions, spreadTable } from './lib/determinism.js';
import { Guest } from './lib/guest.js';
import { bootTuning, buildAll, labOptionsFromEnv, loadSession, RESULTS, runLab, recordAll } from './lib/lab.js';
import { checksTable } from './lib/table.js';
import { allLegacyChecks, legacyBpfCost, legacyTable } from './lib/legacy-checks.js';
import { LATEST_LEGACY, LEGACY_SUITE, legacyOptionsFromEnv, recordLegacy, runLegacyLab } from './lib/legacy-lab.js';
import type { LegacySession } from './lib/legacy.js';

const [cmd, arg] = process.argv.slice(2);
const log = (m: string) => process.stderr.write(`[vm] ${m}\n`);
const suite = process.env.HPVM_SUITE ?? 'trixie';
if (suite !== 'trixie' && suite !== LEGACY_SUITE) throw new Error(`HPVM_SUITE must be trixie or ${LEGACY_SUITE}`);
const legacy = suite === LEGACY_SUITE;

async function main(): Promise<void> {
  switch (cmd) {
    case 'build':
      console.log(JSON.stringify(buildAll(suite), null, 2));
      return;
    case 'run':
    case 'table': {
      if (legacy) {
        const file = cmd === 'run' ? await runLegacyLab(legacyOptionsFromEnv()) : (arg ?? LATEST_LEGACY);
        const session = JSON.parse(readFileSync(file, 'utf8')) as LegacySession;
        if (session.error) console.log(`session stopped early: ${session.error}\n`);
        console.log(`${checksTable(allLegacyChecks(session))}\n\n${legacyTable(session)}`);
        console.log(`\nBPF programs' own CPU (kernel.bpf_stats_enabled=1, tracepoint path):\n${legacyBpfCost(session).map((l) => `- ${l}`).join('\n')}`);
        return;
      }
      const session = loadSession(cmd === 'run' ? await runLab(labOptionsFromEnv()) : (arg ?? join(RESULTS, 'latest.json')));
      console.log(checksTable(allChecks(session)));
      const conv = convergence(session);
      if (conv.length) console.log(`\nio_uring hybrid at QD1: where the sleep converges (not a check):\n${conv.map((l) => `- ${l}`).join('\n')}`);
      const tp = tracepointCpu(session);
      if (tp.length) console.log(`\nTracepoint path, busy-window CPU vs the poller's (not a check):\n${tp.map((l) => `- ${l}`).join('\n')}`);
      const cost = bpfCost(session);
      if (cost.length) console.log(`\nBPF programs' own CPU (kernel.bpf_stats_enabled=1, fentry path):\n${cost.map((l) => `- ${l}`).join('\n')}`);
      return;
    }
    case 'compare': {
      // determinism across boots: two saved sessions of the same profile
      const [a, b] = process.argv.slice(3);
      if (!a || !b) throw new Error('compare needs two session files');
      const rows = compareSessions(loadSession(a), loadSession(b));
      console.log(spreadTable(rows));
      const bounded = rows.filter((r) => Number.isFinite(r.bound));
      const failed = bounded.filter((r) => !r.pass);
      console.log(`\n${bounded.length} bounded figures, ${failed.length} outside their bound; largest bounded spread ${(Math.max(...bounded.map((r) => Math.abs(r.spread))) * 100).toFixed(2)}%`);
      if (failed.length) process.exitCode = 1;
      return;
    }
    case 'exec': {
      if (!arg) throw new Error('exec needs a script');
      const images = buildAll(suite);
      const { accel } = chooseAccel(accelFacts());
      process.stdout.write(await Guest.exec({ ...bootTuning(suite), images, accel, log, bootTimeoutMs: 900_000 }, arg));
      return;
    }
    case 'record':
      if (legacy) await recordLegacy(Number(process.env.HPVM_SECS ?? 40));
      else await recordAll(Number(process.env.HPVM_IOS ?? 60_000));
      return;
    default:
      throw new Error('usage: lab.ts build | run | table [session.json] | compare A.json B.json | exec SCRIPT | record');
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`lab: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
});

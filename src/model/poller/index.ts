// The poller model at any depth and per io_uring ring (README.md in this folder). Pure.
//   evaluatePoller(PollerInput) → PollerResult: the what-if table, best, oracle and current state
//       per I/O at the measured depth; closed forms (today's QD1) where exact, else the simulation.
//   simulate(SimConfig) → SimStats: one seeded run of one sleep rule at one depth.
export * from './types.js';
export { evaluatePoller, depthPoints, DEFAULT_SIM, MAX_DEPTH_POINTS } from './evaluate.js';
export { simulate, type SimConfig, type SimStats, type SleepRule, type SimDevice } from './sim.js';
export { classicCpuAtDepth, ringHalfMinSleep, qd1Table } from './closed.js';
export { Sampler, stream } from './random.js';

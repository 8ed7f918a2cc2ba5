// Compile the TypeScript once before the suite: end-to-end tests run the real dist/cli.js.
// tsc still emits on type errors; type errors fail `npm run typecheck` (run by .ci/run), not every test.
import { spawnSync } from 'node:child_process';

export default function setup(): void {
  const r = spawnSync('npx', ['tsc', '-p', 'tsconfig.json'], { stdio: 'inherit' });
  if (r.status !== 0) console.warn('\n*** tsc reported errors (see above); tests run against what it emitted ***\n');
}

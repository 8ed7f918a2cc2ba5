// Says when a vitest worker process ends before its test file did and Node can tell how (an exit
// code); a death by signal leaves no line here, and test/setup/lostFiles.ts names the file.
import { writeSync } from 'node:fs';
import { afterAll } from 'vitest';

let finished = false;
afterAll(() => {
  finished = true;
});
process.once('exit', (code) => {
  if (!finished) writeSync(2, `\n*** vitest worker ${process.pid} exited with code ${code} before its test file finished ***\n`);
});

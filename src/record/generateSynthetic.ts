// `npm run recording:synthetic`: regenerates the shipped synthetic recording.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { syntheticRecordingText } from './synthetic.js';

/** Where the shipped synthetic recording lives, relative to this file in src/ and in dist/. */
export const SYNTHETIC_RECORDING = fileURLToPath(new URL('../../recordings/synthetic.jsonl', import.meta.url));

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const text = syntheticRecordingText();
  writeFileSync(SYNTHETIC_RECORDING, text);
  process.stderr.write(`wrote ${SYNTHETIC_RECORDING} (${text.length} bytes, ${text.split('\n').length - 2} frames)\n`);
}

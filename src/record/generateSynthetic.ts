// `npm run recording:synthetic`: regenerates the shipped synthetic recording.
import { writeFileSync } from 'node:fs';
import { SYNTHETIC_RECORDING } from './shipped.js';
import { syntheticRecordingText } from './synthetic.js';

const text = syntheticRecordingText();
writeFileSync(SYNTHETIC_RECORDING, text);
process.stderr.write(`wrote ${SYNTHETIC_RECORDING} (${text.length} bytes, ${text.split('\n').length - 2} frames)\n`);

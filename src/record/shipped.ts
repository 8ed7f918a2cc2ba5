// Recordings shipped with the package, found relative to this module in src/ (tests) and dist/.
import { fileURLToPath } from 'node:url';

export const SYNTHETIC_RECORDING = fileURLToPath(new URL('../../recordings/synthetic.jsonl', import.meta.url));

// Reads a recording as a stream: one line at a time, each bounded in length, each validated, so a
// 100 MB recording never sits in memory whole and a bad line is reported by its number.
import { createReadStream } from 'node:fs';
import type { Readable } from 'node:stream';
import type { SnapshotInputs } from '../snapshot/types.js';
import { CheckError } from './check.js';
import { MAX_LINE_CHARS, RecordingError, type RecordingHeader } from './format.js';
import { checkFrame, checkHeader } from './schema.js';

export interface ReadOptions {
  maxLineChars?: number;
}

export interface Line {
  /** 1-based */
  number: number;
  text: string;
}

/** Splits a text stream into lines (LF or CRLF) without ever buffering more than `max` characters of one line. */
export async function* linesOf(input: Readable, max: number, name: string): AsyncGenerator<Line> {
  input.setEncoding('utf8');
  let pending = '';
  let number = 1;
  const tooLong = () => new RecordingError(name, number, `line longer than ${max} characters: not a recording, or damaged`);
  const line = (text: string): Line => ({ number: number++, text: text.endsWith('\r') ? text.slice(0, -1) : text });
  for await (const chunk of input as AsyncIterable<string>) {
    let start = 0;
    for (let nl = chunk.indexOf('\n'); nl >= 0; nl = chunk.indexOf('\n', start)) {
      if (pending.length + nl - start > max) throw tooLong();
      const text = pending + chunk.slice(start, nl);
      pending = '';
      start = nl + 1;
      yield line(text);
    }
    pending += chunk.slice(start);
    if (pending.length > max) throw tooLong();
  }
  if (pending.length > 0) yield line(pending);
}

function parse<T>(name: string, l: Line, check: (v: unknown, path: string) => T, what: string): T {
  let v: unknown;
  try {
    v = JSON.parse(l.text);
  } catch (e) {
    const hint = l.text.trim() === '' ? 'empty line' : `not valid JSON (${(e as Error).message})`;
    throw new RecordingError(name, l.number, `${what}: ${hint}`);
  }
  try {
    return check(v, '');
  } catch (e) {
    if (e instanceof CheckError) throw new RecordingError(name, l.number, `${what}: ${e.message}`);
    throw e;
  }
}

export interface Recording {
  header: RecordingHeader;
  /** The frames in order. Reading it consumes the stream; open the recording again to reread. */
  frames: AsyncGenerator<SnapshotInputs>;
}

/** Reads the header from a text stream and returns it with a lazy iterator over the frames. */
export async function readRecording(input: Readable, name: string, o: ReadOptions = {}): Promise<Recording> {
  const lines = linesOf(input, o.maxLineChars ?? MAX_LINE_CHARS, name);
  const first = await lines.next();
  if (first.done) {
    input.destroy();
    throw new RecordingError(name, 1, 'empty file: a recording starts with a header line');
  }
  const header = parse(name, first.value, checkHeader, 'header');
  async function* frames(): AsyncGenerator<SnapshotInputs> {
    let lastMs = -Infinity;
    for await (const l of lines) {
      const f = parse(name, l, checkFrame, 'frame');
      // Replay schedules frames by these times; a clock that went backwards cannot be replayed.
      if (f.takenAtMs < lastMs) throw new RecordingError(name, l.number, `frame: takenAtMs ${f.takenAtMs} is earlier than the previous frame's ${lastMs}`);
      lastMs = f.takenAtMs;
      yield f;
    }
  }
  return { header, frames: frames() };
}

export async function openRecording(file: string, o: ReadOptions = {}): Promise<Recording> {
  const stream = createReadStream(file);
  // Surface a missing or unreadable file here, with its name, rather than on the first read.
  await new Promise<void>((resolve, reject) => {
    stream.once('ready', () => resolve());
    stream.once('error', (e) => reject(new Error(`cannot open recording ${file}: ${e.message}`)));
  });
  return readRecording(stream, file, o);
}

// Writes a recording to a stream, one line per write, honouring backpressure.
import { once } from 'node:events';
import type { Writable } from 'node:stream';
import type { SnapshotInputs } from '../snapshot/types.js';
import { frameLine, headerLine, type RecordingHeader } from './format.js';

export class RecordingWriter {
  frames = 0;
  bytes = 0;
  private failure?: Error;

  constructor(
    private readonly out: Writable,
    header: RecordingHeader,
  ) {
    // A closed pipe or a full disk must end the recording cleanly, not crash the process.
    out.on('error', (e) => {
      this.failure ??= e;
    });
    this.put(headerLine(header));
  }

  /** Appends a frame; resolves once the stream can take more. Throws if the stream has failed. */
  async write(frame: SnapshotInputs): Promise<void> {
    if (this.failure) throw this.failure;
    const ok = this.put(frameLine(frame));
    this.frames += 1;
    if (!ok) await Promise.race([once(this.out, 'drain'), once(this.out, 'close')]);
    if (this.failure) throw this.failure;
  }

  /** Flushes and closes the stream (leaves stdout open, but flushed). */
  async close(): Promise<void> {
    if (this.failure) return;
    if (this.out === process.stdout) {
      await new Promise<void>((resolve) => this.out.write('', () => resolve()));
      return;
    }
    await new Promise<void>((resolve) => this.out.end(() => resolve()));
  }

  /** The first error the stream reported, if any. */
  error(): Error | undefined {
    return this.failure;
  }

  private put(line: string): boolean {
    this.bytes += Buffer.byteLength(line);
    return this.out.write(line);
  }
}

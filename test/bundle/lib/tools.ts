// External binaries the bundle tests use; a missing one makes its tests skip loudly.
import { accessSync, constants } from 'node:fs';

export function findBinary(name: string, dirs = [...(process.env['PATH'] ?? '').split(':').filter(Boolean), '/usr/sbin', '/sbin']): string | undefined {
  for (const d of dirs) {
    try {
      accessSync(`${d}/${name}`, constants.X_OK);
      return `${d}/${name}`;
    } catch {
      /* next */
    }
  }
  return undefined;
}

export function requireBinary(name: string, why: string): string | undefined {
  const p = findBinary(name);
  if (!p) console.warn(`\n*** SKIPPING ${why}: ${name} not found (apt-get install the package that ships it) ***\n`);
  return p;
}

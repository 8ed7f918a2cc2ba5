// README.md's flag table of `serve` against `serve --help`: every flag there exists, every flag of
// --help is there, and a single flag's default is the one --help states.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI, ROOT } from '../helpers/exporter.js';

const readme = readFileSync(resolve(ROOT, 'README.md'), 'utf8');
const rawHelp = spawnSync(process.execPath, [CLI, 'serve', '--help'], { encoding: 'utf8' }).stdout;
const help = rawHelp.replace(/\s+/g, ' ');
const COLLECTORS = ['sysfs', 'debugfs', 'era', 'bpf', 'model'];

const table = readme.slice(readme.indexOf('The main ones of `serve`:'));
const rows = table.slice(0, table.indexOf('\n\n', table.indexOf('| flag |'))).split('\n').filter((l) => l.startsWith('| `--'));
const cells = rows.map((r) => r.split(/(?<!\\)\|/).map((c) => c.trim()));

function flagsOf(cell: string): string[] {
  return [...cell.matchAll(/`(--[\w.<>-]+)`/g)].flatMap(([, f]) => (f!.includes('<name>') ? COLLECTORS.map((n) => f!.replace('<name>', n)) : [f!]));
}

describe("README's serve flag table", () => {
  it('names only flags that `serve --help` has, and all of them', () => {
    const inReadme = new Set(cells.flatMap((c) => flagsOf(c[1]!)));
    // Each option line of --help starts with its flag.
    const inHelp = new Set([...rawHelp.matchAll(/^ {2}(?:-\w, )?(--[\w.-]+)/gm)].map((m) => m[1]!).filter((f) => f !== '--help'));
    expect(inHelp.size).toBeGreaterThan(20);
    expect([...inReadme].filter((f) => !inHelp.has(f)), 'in the README, not in --help').toEqual([]);
    expect([...inHelp].filter((f) => !inReadme.has(f)), 'in --help, not in the README').toEqual([]);
  });

  it("states each single flag's default as --help does", () => {
    let checked = 0;
    for (const c of cells) {
      const flags = flagsOf(c[1]!);
      const def = /^`([^`]+)`$/.exec(c[2]!)?.[1];
      if (flags.length !== 1 || !def) continue;
      const at = help.indexOf(`${flags[0]} `);
      const next = help.indexOf(' --', at + flags[0]!.length);
      const text = help.slice(at, next < 0 ? undefined : next).replace(/\\\\/g, '\\');
      checked++;
      expect(text, flags[0]).toMatch(new RegExp(`default: "?${def.replace(/\\\|/g, '|').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}"?\\)`));
    }
    expect(checked).toBeGreaterThanOrEqual(6);
  });
});

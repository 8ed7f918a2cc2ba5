// Processes are started with argument arrays only, never through a shell: every execa call in
// src/ passes (file, string[]) with no `shell` option, no command-string or template-tag variant
// of execa is imported, node:child_process is not used at all, and the C loader calls neither
// system() nor popen(). Checked on the TypeScript AST with the type checker, not by regex alone.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { ROOT } from './helpers/proc.js';

const SRC = join(ROOT, 'src');

function filesUnder(dir: string, ext: RegExp): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? filesUnder(join(dir, e.name), ext) : ext.test(e.name) ? [join(dir, e.name)] : [],
  );
}

describe('no shell anywhere a process is started', () => {
  const files = filesUnder(SRC, /\.ts$/);
  const program = ts.createProgram(files, { module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, target: ts.ScriptTarget.ES2022, strict: true, noEmit: true });
  const checker = program.getTypeChecker();

  const findings = { calls: [] as string[], problems: [] as string[] };
  for (const sf of program.getSourceFiles()) {
    if (!sf.fileName.startsWith(SRC)) continue;
    const where = (n: ts.Node) => `${relative(ROOT, sf.fileName)}:${sf.getLineAndCharacterOfPosition(n.getStart()).line + 1}`;
    const execaNames = new Set<string>();
    ts.forEachChild(sf, function imports(n) {
      if (!ts.isImportDeclaration(n) || !ts.isStringLiteral(n.moduleSpecifier)) return;
      const mod = n.moduleSpecifier.text;
      if (mod === 'child_process' || mod === 'node:child_process') findings.problems.push(`${where(n)}: imports ${mod} (use execa with an argument array)`);
      if (mod !== 'execa') return;
      const b = n.importClause?.namedBindings;
      if (!b || !ts.isNamedImports(b) || n.importClause?.name) {
        findings.problems.push(`${where(n)}: import execa by name ({ execa }) so every use can be checked`);
        return;
      }
      for (const el of b.elements) {
        const imported = (el.propertyName ?? el.name).text;
        if (imported !== 'execa') findings.problems.push(`${where(el)}: execa's ${imported} runs command strings or templates; use execa(file, args)`);
        else execaNames.add(el.name.text);
      }
    });
    const visit = (n: ts.Node): void => {
      if (ts.isCallExpression(n) && ts.isIdentifier(n.expression) && execaNames.has(n.expression.text)) {
        findings.calls.push(where(n));
        const [file, args, options] = n.arguments;
        const argsType = args && checker.getTypeAtLocation(args);
        if (!file || !args || !argsType || !(checker.isArrayType(argsType) || checker.isTupleType(argsType))) {
          findings.problems.push(`${where(n)}: execa must get (file, string[]), got ${args ? checker.typeToString(argsType!) : 'no argument array'}`);
        }
        if (options && ts.isObjectLiteralExpression(options)) {
          for (const p of options.properties) {
            if (p.name && ts.isIdentifier(p.name) && p.name.text === 'shell') findings.problems.push(`${where(p)}: shell option on execa`);
            if (ts.isSpreadAssignment(p)) findings.problems.push(`${where(p)}: spread in execa options (cannot be checked for shell)`);
          }
        } else if (options) findings.problems.push(`${where(n)}: execa options must be an object literal, to be checked for shell`);
      }
      if (ts.isTaggedTemplateExpression(n) && ts.isIdentifier(n.tag) && execaNames.has(n.tag.text)) findings.problems.push(`${where(n)}: execa as a template tag`);
      ts.forEachChild(n, visit);
    };
    visit(sf);
  }

  it('finds the loader spawn (the check is looking at the right code)', () => {
    expect(findings.calls.some((c) => c.startsWith('src/bpf/client.ts'))).toBe(true);
  });

  it('has no shell, command string or child_process use in src/', () => {
    expect(findings.problems).toEqual([]);
  });

  it('the C loader calls neither system() nor popen()', () => {
    for (const f of filesUnder(SRC, /\.[ch]$/)) {
      const code = readFileSync(f, 'utf8').replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, '');
      expect(code, relative(ROOT, f)).not.toMatch(/\b(system|popen|execl|execlp|execle|execv|execvp|execvpe)\s*\(/);
    }
  });
});

// Bundles dist/cli.js and its production dependencies into one CommonJS file, the form a Node 20
// single executable application runs (it can require only Node's built-in modules).
//   node scripts/release-bundle.mjs DIST_DIR OUT.cjs   (DIST_DIR: tsc's output of src/)
// dist/ finds package.json, the BPF loader and the synthetic recording relative to its own files
// (import.meta.url). The executable stands where dist/ would stand in the package: each module's
// import.meta.url becomes <directory of the executable>/dist/<its path>, so the package layout
// next to the executable (package.json, build/bpf/, recordings/) is found unchanged.
import { readFile } from 'node:fs/promises';
import { relative, resolve } from 'node:path';
import { build } from 'esbuild';

const [dist, out] = process.argv.slice(2).map((p) => resolve(p));
if (!dist || !out) throw new Error('usage: release-bundle.mjs DIST_DIR OUT.cjs');

const execRelativeUrl = {
  name: 'exec-relative-import-meta-url',
  setup(b) {
    b.onLoad({ filter: /\.js$/ }, async (args) => {
      if (!args.path.startsWith(`${dist}/`)) return undefined;
      const rel = `dist/${relative(dist, args.path)}`;
      const src = await readFile(args.path, 'utf8');
      return { contents: src.replaceAll('import.meta.url', `__hpModuleUrl(${JSON.stringify(rel)})`), loader: 'js' };
    });
  },
};

const result = await build({
  entryPoints: [resolve(dist, 'cli.js')],
  outfile: out,
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  minify: true,
  legalComments: 'none',
  logLevel: 'warning',
  plugins: [execRelativeUrl],
  // DIST_DIR may live outside the clone: dependencies come from its node_modules.
  nodePaths: [resolve(import.meta.dirname, '../node_modules')],
  banner: {
    js: "const __hpModuleUrl = (p) => require('node:url').pathToFileURL(require('node:path').join(require('node:path').dirname(process.execPath), p)).href;",
  },
});
if (result.warnings.length) throw new Error(`esbuild warnings: ${result.warnings.map((w) => w.text).join('; ')}`);

/**
 * Bundles each process's entry point with the workspace packages it uses (@vouch/*) into
 * `apps/<app>/dist/main.js`. Third-party packages stay external and load from node_modules
 * as usual. `npm start` and the start:* scripts build before starting (a fraction of a
 * second); the container image builds once. Running the bundle instead of transpiling
 * TypeScript at run time keeps the processes lean (docs/architecture.md, "Build").
 */
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Plugin } from 'esbuild';

export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

/** App → its entry point (relative to the repository root), bundled to apps/<app>/dist/main.js. */
export const ENTRIES = {
  api: 'apps/api/src/main.ts',
  worker: 'apps/worker/src/main.ts',
} as const;

/** Our packages are bundled; third-party ones stay external (some read files next to their modules). */
const workspaceOnly: Plugin = {
  name: 'bundle-workspace-only',
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, (args) =>
      args.path.startsWith('@vouch/') || args.path.startsWith('node:')
        ? undefined
        : { path: args.path, external: true },
    );
  },
};

/**
 * Builds every entry. Files are written to a temporary name and renamed, so a process
 * starting while another build runs (parallel test files) never loads half a file.
 */
export async function buildAll(): Promise<void> {
  await Promise.all(Object.entries(ENTRIES).map(([app, entry]) => buildApp(app, entry)));
}

let built: Promise<void> | undefined;

/** Builds once per process (for tests and the benchmark, which start the bundles). */
export function ensureBuilt(): Promise<void> {
  built ??= buildAll();
  return built;
}

/**
 * The node options each process runs with; the start scripts of package.json spell the same (a
 * unit test holds them together). Source maps name the TypeScript sources in stack traces. The
 * API keeps a young generation of 8 MB semi-spaces instead of Node 22's 16 MB: ~16 MB less
 * resident for ~1.3 µs more garbage collection per request (docs/architecture.md, "Memory").
 * The worker, whose jobs allocate in bulk, keeps the default.
 */
export const NODE_FLAGS = {
  api: ['--enable-source-maps', '--max-semi-space-size=8'],
  worker: ['--enable-source-maps'],
} as const satisfies Record<keyof typeof ENTRIES, readonly string[]>;

/** The node arguments that run an app's bundle, as the start scripts of package.json do. */
export function bundleArgs(app: keyof typeof ENTRIES): string[] {
  return [...NODE_FLAGS[app], `apps/${app}/dist/main.js`];
}

async function buildApp(app: string, entry: string): Promise<void> {
  const outdir = join(REPO_ROOT, 'apps', app, 'dist');
  const result = await build({
    absWorkingDir: REPO_ROOT,
    entryPoints: { main: entry },
    outdir,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    sourcemap: 'linked',
    // Node maps stack traces with the mappings alone (it reads the source files for a code
    // frame); the sources inside the map only made every process hold them in memory.
    sourcesContent: false,
    logLevel: 'warning',
    write: false,
    plugins: [workspaceOnly],
  });
  for (const file of result.outputFiles) {
    mkdirSync(dirname(file.path), { recursive: true });
    const temporary = `${file.path}.${process.pid}.tmp`;
    writeFileSync(temporary, file.contents);
    renameSync(temporary, file.path);
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const started = performance.now();
  await buildAll();
  console.log(
    `built ${Object.keys(ENTRIES)
      .map((app) => `apps/${app}/dist`)
      .join(', ')} in ${Math.round(performance.now() - started)} ms`,
  );
}

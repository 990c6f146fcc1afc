/**
 * Everything the harness creates (child processes, the database, Redis keys) registers
 * an undo step here. The steps run once, newest first: at the end of a run, on an
 * error, or on SIGINT/SIGTERM. Child processes still alive at `exit` are SIGKILLed.
 */
type Step = { name: string; run: () => unknown };

const steps: Step[] = [];
const livePids = new Set<number>();
let running: Promise<void> | null = null;

export function onCleanup(name: string, run: Step['run']): () => void {
  const step = { name, run };
  steps.push(step);
  return () => {
    const i = steps.indexOf(step);
    if (i >= 0) steps.splice(i, 1);
  };
}

/** A child process the harness started; killed at exit at the latest. */
export function trackPid(pid: number | undefined): void {
  if (pid) livePids.add(pid);
}

export function untrackPid(pid: number | undefined): void {
  if (pid) livePids.delete(pid);
}

export function cleanup(): Promise<void> {
  running ??= (async () => {
    while (steps.length) {
      const step = steps.pop() as Step;
      try {
        await step.run();
      } catch (error) {
        console.error(`[bench] cleanup "${step.name}" failed: ${(error as Error).message}`);
      }
    }
  })();
  return running;
}

function killLeftovers(): void {
  for (const pid of livePids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  livePids.clear();
}

let installed = false;

export function installSignalHandlers(): void {
  if (installed) return;
  installed = true;
  process.on('exit', killLeftovers);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(signal, () => {
      console.error(`\n[bench] ${signal}: stopping child processes, dropping the database and Redis keys…`);
      const hardStop = setTimeout(() => process.exit(130), 20_000);
      hardStop.unref();
      void cleanup().finally(() => process.exit(130));
    });
  }
}

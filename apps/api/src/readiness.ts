/** A dependency's answer to a readiness probe. */
export type CheckState = 'ok' | 'unavailable' | 'not configured';

/** Each dependency: the pings that must all answer, or none when it is not configured. */
export type ReadinessChecks = Record<string, Array<() => Promise<void>>>;

/** A ping that takes longer than this counts as down, so /ready never hangs. */
export const CHECK_TIMEOUT_MS = 1000;

async function within(ping: () => Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      ping(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Runs every check at once; ready when none is unavailable. */
export async function probe(checks: ReadinessChecks, timeoutMs = CHECK_TIMEOUT_MS) {
  const entries = await Promise.all(
    Object.entries(checks).map(async ([name, pings]): Promise<[string, CheckState]> => {
      if (!pings.length) return [name, 'not configured'];
      try {
        await Promise.all(pings.map((ping) => within(ping, timeoutMs)));
        return [name, 'ok'];
      } catch {
        return [name, 'unavailable'];
      }
    }),
  );
  const results = Object.fromEntries(entries) as Record<string, CheckState>;
  return { ready: !entries.some(([, state]) => state === 'unavailable'), checks: results };
}

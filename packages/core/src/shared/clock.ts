/** The service's notion of "now". Injected so tests can move across day and month boundaries. */
export type Clock = () => Date;

export const systemClock: Clock = () => new Date();

export function toUnixSeconds(date: Date): number {
  return Math.floor(date.getTime() / 1000);
}

/**
 * When something made at `now` that lasts `ms` ends: on the whole second at or after it. Times are
 * answered in whole seconds (`toUnixSeconds` rounds down), so a hold, a grant or an approval ends
 * exactly at the `expiresAt` it was answered with, and lasts at least what was asked.
 */
export function expiryAfter(now: Date, ms: number): Date {
  return new Date(Math.ceil((now.getTime() + ms) / 1000) * 1000);
}

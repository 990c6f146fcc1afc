/** The service's notion of "now". Injected so tests can move across day and month boundaries. */
export type Clock = () => Date;

export const systemClock: Clock = () => new Date();

export function toUnixSeconds(date: Date): number {
  return Math.floor(date.getTime() / 1000);
}

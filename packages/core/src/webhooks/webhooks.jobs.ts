import type { jobs, Processor } from '@vouch/jobs';
import type { Services } from '../services.ts';

/** Fans new events out to the subscriptions that match them (asked for after commits that wrote events). */
export const dispatchEventsProcessor =
  (services: Services): Processor<typeof jobs.dispatchEvents> =>
  () =>
    services.webhooks.dispatch();

/** One attempt of one delivery; asks to run again at its next retry time when it failed (RunAgainLater). */
export const deliverWebhookProcessor =
  (services: Services): Processor<typeof jobs.deliverWebhook> =>
  (payload) =>
    services.webhooks.deliver(payload.deliveryId, payload.run);

/** Catches up what a lost job or an unreachable queue left behind; scheduled by the runtime (WEBHOOK_SWEEP_INTERVAL_MS). */
export const sweepWebhooksProcessor =
  (services: Services): Processor<typeof jobs.sweepWebhooks> =>
  () =>
    services.webhooks.sweep();

/** Deletes events past EVENTS_RETENTION_DAYS, with their deliveries; scheduled hourly by the runtime. */
export const purgeEventsProcessor =
  (services: Services): Processor<typeof jobs.purgeEvents> =>
  async () => ({ purged: await services.events.purge() });

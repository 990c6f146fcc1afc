import { z } from 'zod';
import { refusalReason } from './budgets.ts';
import { organizationId } from './organizations.ts';
import { address, amount, gradeValue, pageLimit, queryUnixSeconds, scoreValue, unixSeconds } from './primitives.ts';

/**
 * The catalogue of events (docs/events.md): every type, what its `data` holds, and whether a
 * webhook may subscribe to it. `append` checks an event's data against its schema before it is
 * written; types whose data another part of the service adds to carry a few required fields and
 * accept more (loose objects).
 */

// A spend or hold that reached its statement had a budget: every refusal but NO_BUDGET.
const refusal = refusalReason.exclude(['NO_BUDGET']);

/** A spend, or a hold placed or refused: what it asked for and the budget after it. */
const spendData = z.object({
  spendId: z
    .string()
    .nullable()
    .meta({ description: 'The ledger row (a spend, or a refused hold); null for a hold placed' }),
  authorizationId: z.string().nullable().meta({ description: 'The hold placed; null for a spend' }),
  amount,
  asset: z.string().meta({ description: "The budget's asset ('' for the default unit)" }),
  counterparty: address.nullable(),
  reason: refusal.nullable().meta({ description: 'Why it was refused; null when accepted' }),
  dailySpent: amount.meta({ description: 'Spent in the current UTC day after it' }),
  monthlySpent: amount,
  dailyHeld: amount.meta({ description: 'Held in the current UTC day after it (counts against the limit)' }),
  monthlyHeld: amount,
  dailyLimit: amount,
  monthlyLimit: amount,
  perTxLimit: amount,
  expiresAt: unixSeconds.nullable().meta({ description: 'When a hold expires; null for a spend' }),
});

const budgetThresholdData = z.object({
  window: z.enum(['daily', 'monthly']),
  threshold: z.number().int().min(1).max(100).meta({ description: 'The percentage of the limit reached' }),
  limit: amount,
  spent: amount.meta({ description: 'Spent in the window after the spend or hold that crossed the threshold' }),
  held: amount.meta({ description: 'Held in the window then: spent + held is what the threshold is judged on' }),
  asset: z.string(),
  windowStart: unixSeconds,
  resetsAt: unixSeconds,
  spendId: z.string().nullable().meta({ description: 'The spend that crossed it (null when a hold did)' }),
  authorizationId: z.string().nullable().meta({ description: 'The hold that crossed it (null when a spend did)' }),
});

const scoreSource = z.enum(['manual', 'batch', 'model']);

const scoreChangedData = z.object({
  previousScore: scoreValue,
  score: scoreValue,
  source: scoreSource.meta({ description: '`manual` (the score endpoint), `batch` or `model` (a recomputation)' }),
  reason: z.string().nullable(),
});

const gradeChangedData = z.object({
  previousGrade: gradeValue,
  grade: gradeValue,
  previousScore: scoreValue,
  score: scoreValue,
  source: scoreSource,
});

const sanctionsHitData = z.object({
  matches: z
    .array(z.object({ role: z.enum(['agent', 'owner']), address, lists: z.array(z.string()) }))
    .min(1)
    .meta({ description: 'The agent, its owner or both, newly on the list, and the lists naming each' }),
  owner: address.nullable(),
  snapshot: z.object({ id: z.string(), name: z.string(), snapshotDate: z.string() }),
});

const verificationCompletedData = z.object({
  status: z.enum(['VERIFIED', 'PARTIALLY_VERIFIED', 'UNVERIFIED', 'SUSPICIOUS']),
  previousStatus: z.enum(['VERIFIED', 'PARTIALLY_VERIFIED', 'UNVERIFIED', 'SUSPICIOUS']).nullable(),
  passed: z.number().int(),
  total: z.number().int(),
  score: scoreValue,
  grade: gradeValue,
  verifiedAt: unixSeconds,
});

// No `url`: events are read with the `read` scope, and where an endpoint sends (a URL may carry a
// token) is shown to `manage` keys only (GET /api/webhooks/:id).
const webhookDisabledData = z.object({
  webhookId: z.string(),
  reason: z.string(),
  failingSince: unixSeconds,
  lastStatusCode: z.number().int().nullable(),
  lastError: z.string().nullable(),
});

const webhookTestData = z.object({ webhookId: z.string(), message: z.string() });

/** A hold captured, voided or expired: the hold's id and amount at least. */
const authorizationData = z.looseObject({ authorizationId: z.string(), amount });
/** A refund of a spend or a capture: its id and amount at least. */
const refundData = z.looseObject({ refundId: z.string(), amount });
/** An approval a spend waits for: its id at least. */
const approvalData = z.looseObject({ approvalId: z.string() });

/** Every event type: its data schema, what it means, and whether a webhook may subscribe to it. */
export const eventCatalogue = {
  'spend.accepted': { data: spendData, subscribable: true, about: 'a spend was accepted and debited' },
  'spend.refused': { data: spendData, subscribable: true, about: 'a spend was refused (BUDGET_EXCEEDED)' },
  'authorization.created': { data: spendData, subscribable: true, about: 'a hold was placed on a budget' },
  'authorization.refused': {
    data: spendData,
    subscribable: true,
    about: 'a hold was refused (BUDGET_EXCEEDED); the refusal is in the ledger',
  },
  'authorization.captured': { data: authorizationData, subscribable: true, about: 'a hold was captured' },
  'authorization.voided': { data: authorizationData, subscribable: true, about: 'a hold was released' },
  'authorization.expired': { data: authorizationData, subscribable: true, about: 'a hold expired uncaptured' },
  'refund.created': { data: refundData, subscribable: true, about: 'a spend or capture was refunded' },
  'approval.requested': { data: approvalData, subscribable: true, about: 'a spend waits for an approval' },
  'approval.approved': { data: approvalData, subscribable: true, about: 'an approval was granted' },
  'approval.denied': { data: approvalData, subscribable: true, about: 'an approval was denied' },
  'approval.expired': { data: approvalData, subscribable: true, about: 'an approval expired undecided' },
  'budget.threshold': {
    data: budgetThresholdData,
    subscribable: true,
    about: 'a spend took a daily or monthly window past a threshold of its limit (once per window and threshold)',
  },
  'score.changed': { data: scoreChangedData, subscribable: true, about: 'an agent’s score changed' },
  'grade.changed': { data: gradeChangedData, subscribable: true, about: 'an agent’s credit grade changed' },
  'sanctions.hit': {
    data: sanctionsHitData,
    subscribable: true,
    about: 'a sanctions list import newly lists a known agent or its owner',
  },
  'verification.completed': {
    data: verificationCompletedData,
    subscribable: true,
    about: 'a verification gave an agent another status than its previous one (or its first)',
  },
  'webhook.disabled': {
    data: webhookDisabledData,
    subscribable: true,
    about: 'an endpoint failing for days was disabled',
  },
  'webhook.test': {
    data: webhookTestData,
    subscribable: false,
    about: 'sent to one endpoint by POST /api/webhooks/:id/test',
  },
} as const;

export type EventType = keyof typeof eventCatalogue;
export const eventTypes = Object.keys(eventCatalogue) as EventType[];
export type EventData<T extends EventType> = z.input<(typeof eventCatalogue)[T]['data']>;
/** Types a webhook may subscribe to. */
export const subscribableEventTypes = eventTypes.filter((t) => eventCatalogue[t].subscribable);

export const eventType = z.enum(eventTypes as [EventType, ...EventType[]]).meta({ example: 'spend.refused' });
export const subscribableEventType = z
  .enum(subscribableEventTypes as [EventType, ...EventType[]])
  .meta({ description: 'An event type of the catalogue (docs/events.md)', example: 'spend.refused' });

/** `evt_` and the event's sequence number. */
export const eventId = z
  .string()
  .regex(/^evt_[1-9]\d{0,17}$/, 'must be evt_ followed by a number')
  .meta({ example: 'evt_1042' });

export const event = z
  .object({
    id: eventId.meta({ description: 'Also the `webhook-id` of its deliveries (the same on every retry)' }),
    sequence: z.number().int().positive().meta({
      description:
        'Increasing in the order events were written (for one budget, the order of its changes); shared by every organization, so not contiguous',
    }),
    type: eventType,
    organizationId,
    agent: z.string().nullable().meta({ description: 'The agent it is about (null for webhook events)' }),
    createdAt: unixSeconds,
    data: z.record(z.string(), z.unknown()).meta({ description: 'Per type: docs/events.md' }),
  })
  .meta({ id: 'Event' });
export type Event = z.infer<typeof event>;

export const eventParams = z.object({ id: eventId });

export const eventsQuery = z.strictObject({
  limit: pageLimit(),
  cursor: z
    .string()
    .max(128)
    .optional()
    .meta({ description: 'The `nextCursor` of an earlier answer: events written after that page' }),
  since: queryUnixSeconds
    .optional()
    .meta({ description: 'Unix seconds: events written at or after this time (without a cursor)' }),
  type: eventType.optional(),
  agent: address.optional(),
});
export type EventsQuery = z.infer<typeof eventsQuery>;

export const eventList = z.object({
  events: z.array(event),
  nextCursor: z.string().meta({
    description: 'Where the next poll starts: pass it as `cursor` to get what was written after this page',
  }),
  hasMore: z.boolean().meta({ description: 'More events are already there: ask again at once' }),
});
export type EventList = z.infer<typeof eventList>;

// ── Webhooks ─────────────────────────────────────────────────────────────────────────────────────

/** `wh_` and 16 hex digits. */
export const webhookId = z
  .string()
  .regex(/^wh_[0-9a-f]{16}$/, 'must be wh_ followed by 16 hex digits')
  .meta({ example: 'wh_3f9a1c0e5b7d2a64' });
/** `dlv_` and a number. */
export const deliveryId = z
  .string()
  .regex(/^dlv_[1-9]\d{0,17}$/, 'must be dlv_ followed by a number')
  .meta({ example: 'dlv_77' });

export const webhookParams = z.object({ id: webhookId });
export const deliveryParams = z.object({ id: webhookId, deliveryId });

const webhookUrl = z
  .string()
  .max(2048)
  .superRefine((value, ctx) => {
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      ctx.addIssue({ code: 'custom', message: 'must be an absolute http or https URL' });
      return;
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') {
      ctx.addIssue({ code: 'custom', message: 'must be an http or https URL' });
    } else if (url.username || url.password) {
      ctx.addIssue({ code: 'custom', message: 'must not carry credentials' });
    } else if (url.href.includes('#')) {
      // An empty fragment (`…#`) has no `hash`, but is kept in the parsed form all the same.
      ctx.addIssue({ code: 'custom', message: 'must not have a fragment' });
    } else if (url.href.length > 2048) {
      // The limit is on the form kept and requested (percent-encoding may triple what was written).
      ctx.addIssue({ code: 'custom', message: 'must be at most 2048 characters once parsed' });
    }
  })
  // Kept and shown as it is parsed and requested (spaces and tabs gone, scheme and host in lower
  // case, dot segments resolved), not as it was written.
  .transform((value) => new URL(value).href)
  .meta({
    description: 'Where events are POSTed (http or https); stored in its parsed form',
    example: 'https://example.com/vouch/webhooks',
  });

const eventTypeList = z
  .array(subscribableEventType)
  .min(1)
  .max(eventTypes.length)
  .refine((t) => new Set(t).size === t.length, { message: 'eventTypes must not repeat' });

const description = z.string().trim().max(500);

export const createWebhookBody = z.strictObject({
  url: webhookUrl,
  eventTypes: eventTypeList.meta({ example: ['spend.refused', 'budget.threshold'] }),
  description: description.optional(),
});
export type CreateWebhookInput = z.infer<typeof createWebhookBody>;

export const updateWebhookBody = z
  .strictObject({
    url: webhookUrl.optional(),
    eventTypes: eventTypeList.optional(),
    description: description.nullable().optional(),
    enabled: z
      .boolean()
      .optional()
      .meta({ description: '`true` turns a disabled endpoint back on (its failure record starts again)' }),
  })
  .refine((b) => Object.values(b).some((v) => v !== undefined), { message: 'nothing to change' });
export type UpdateWebhookInput = z.infer<typeof updateWebhookBody>;

export const replayBody = z
  .strictObject({
    since: unixSeconds.meta({ description: 'Events written at or after this time (unix seconds)' }),
    until: unixSeconds.optional().meta({ description: 'and before this one (default: now)' }),
  })
  .refine((b) => b.until === undefined || b.since < b.until, {
    message: 'since must be before until',
    path: ['since'],
  });
export type ReplayInput = z.infer<typeof replayBody>;

/** The most a replaced secret signs after a rotation: a day. */
export const PREVIOUS_SECRET_MAX_SECONDS = 86_400;

const previousSecrets = z.array(z.object({ expiresAt: unixSeconds })).meta({
  description: 'Secrets replaced by a rotation that still sign deliveries, each until its time; latest first',
});

export const webhook = z
  .object({
    id: webhookId,
    organizationId,
    url: z.string(),
    description: z.string().nullable(),
    eventTypes: z.array(eventType),
    enabled: z.boolean(),
    disabledReason: z.string().nullable(),
    disabledAt: unixSeconds.nullable(),
    failingSince: unixSeconds.nullable().meta({ description: 'First failed attempt since the last success' }),
    lastSuccessAt: unixSeconds.nullable(),
    previousSecretExpiresAt: unixSeconds
      .nullable()
      .meta({ description: 'Until then deliveries are signed with a previous secret too (the last to stop)' }),
    previousSecrets: previousSecrets,
    createdAt: unixSeconds,
    updatedAt: unixSeconds,
  })
  .meta({ id: 'Webhook' });
export type Webhook = z.infer<typeof webhook>;

const secret = z.string().meta({
  description: 'The signing secret (`whsec_` + base64), shown only in this answer',
  example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
});

export const createdWebhook = webhook.extend({ secret }).meta({ id: 'CreatedWebhook' });
export const rotatedSecret = z.object({
  id: webhookId,
  secret,
  previousSecretExpiresAt: unixSeconds.meta({
    description: 'The secret this rotation replaced signs deliveries too until then (now: it stopped)',
  }),
  previousSecrets,
});

/** Seconds, at most a day. */
const keepSeconds = z
  .number()
  .int()
  .min(0)
  .max(PREVIOUS_SECRET_MAX_SECONDS)
  .meta({ description: 'How long the secret being replaced keeps signing, in seconds (0–86400)' });

export const rotateSecretBody = z
  .strictObject({
    previousSecretExpiresIn: keepSeconds.optional().meta({
      description:
        'How long the replaced secret keeps signing, in seconds, and the most any earlier one still may; ' +
        '0 stops every previous secret now (a leaked secret). Default 86400',
    }),
  })
  .nullish();
export type RotateSecretInput = z.infer<typeof rotateSecretBody>;

export const webhookList = z.object({ webhooks: z.array(webhook) });

export const deliveryAttempt = z.object({
  attempt: z.number().int(),
  statusCode: z.number().int().nullable().meta({ description: 'The receiver’s status; null when none came' }),
  durationMs: z.number().int(),
  error: z.string().nullable(),
  at: unixSeconds,
});

export const delivery = z
  .object({
    id: deliveryId,
    webhookId,
    eventId,
    eventType,
    status: z.enum(['pending', 'succeeded', 'failed']),
    attempts: z.number().int(),
    nextAttemptAt: unixSeconds.nullable(),
    lastStatusCode: z.number().int().nullable(),
    lastError: z.string().nullable(),
    deliveredAt: unixSeconds.nullable(),
    createdAt: unixSeconds,
    attemptLog: z.array(deliveryAttempt).meta({ description: 'Every attempt, oldest first (at most the last 20)' }),
  })
  .meta({ id: 'WebhookDelivery' });
export type Delivery = z.infer<typeof delivery>;

export const deliveriesQuery = z.strictObject({
  limit: pageLimit(100, 20),
  cursor: z.string().max(128).optional(),
  status: z.enum(['pending', 'succeeded', 'failed']).optional(),
});
export type DeliveriesQuery = z.infer<typeof deliveriesQuery>;

export const deliveryList = z.object({ deliveries: z.array(delivery), nextCursor: z.string().nullable() });

export const testDelivery = z.object({ eventId, deliveryId, status: z.enum(['pending', 'succeeded', 'failed']) });

export const replayResult = z.object({
  queued: z.number().int().meta({ description: 'Deliveries created or sent again' }),
  skipped: z
    .number()
    .int()
    .meta({ description: 'Events of the range this endpoint already received, or whose delivery is still pending' }),
  complete: z
    .boolean()
    .meta({ description: 'false: more than 10,000 events of the range were to be sent; replay from `until`' }),
  until: unixSeconds.meta({ description: 'The end of what was replayed' }),
});

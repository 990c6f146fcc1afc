import type { DB, DeliveryStatus, Kysely, WebhookRow } from '@vouch/db';
import { type JobRunner, jobs, RunAgainLater } from '@vouch/jobs';
import type {
  CreateWebhookInput,
  DeliveriesQuery,
  Delivery,
  EventType,
  ReplayInput,
  RotateSecretInput,
  UpdateWebhookInput,
  Webhook,
} from '@vouch/schemas';
import type { AuditService } from '../audit/audit.service.ts';
import * as events from '../events/events.repository.ts';
import { type EventsService, publicEventId, toEvent } from '../events/events.service.ts';
import { type Actor, systemActor } from '../shared/actor.ts';
import { type Clock, expiryAfter, toUnixSeconds } from '../shared/clock.ts';
import { idCursor, idFromCursor } from '../shared/cursor.ts';
import { DomainError, NotFoundError, ValidationError } from '../shared/errors.ts';
import { inTransaction } from '../shared/transaction.ts';
import { postWebhook, type SendOptions, type SendResult } from './webhooks.http.ts';
import {
  delivered,
  literalTargetProblem,
  MAX_PREVIOUS_SECRETS,
  newSecret,
  newWebhookId,
  PREVIOUS_SECRET_VALID_MS,
  type PreviousSecret,
  retireSecret,
  retryDelayMs,
  signatureHeader,
  signingSecrets,
} from './webhooks.model.ts';
import * as repo from './webhooks.repository.ts';

export interface WebhooksSettings {
  timeoutMs: number;
  allowPrivateTargets: boolean;
  /** An endpoint with no success since its first failure this long ago is disabled. */
  disableAfterMs: number;
  /** Endpoints one organization may have at once (absent: no limit). */
  perOrganization?: number | undefined;
}

export interface WebhooksDeps {
  db: Kysely<DB>;
  clock: Clock;
  runner: JobRunner;
  audit: AuditService;
  events: EventsService;
  settings: WebhooksSettings;
  /** Sends one message (tests may wrap it); default: postWebhook. */
  send?: (url: string, headers: Record<string, string>, body: string, options: SendOptions) => Promise<SendResult>;
  onError?: (error: unknown, context: Record<string, unknown>) => void;
}

/** Events fanned out per organization and statement, and statements per dispatch job (the next job continues). */
const FAN_OUT_BATCH = 1000;
const FAN_OUT_ROUNDS = 20;
/**
 * A pending delivery due this long ago whose attempt has not happened: its job is queued again.
 * Queuing a job that still waits or runs adds nothing (its id is the delivery's), so this only
 * spares the queue a useless add for deliveries queued a moment ago; one whose job could not be
 * queued (Redis away, or back but not yet to the process that fanned it out) goes out with the
 * first sweep after it.
 */
export const STRANDED_AFTER_MS = 5_000;
const STRANDED_BATCH = 1000;
/**
 * Events committed above the horizon wait for an older transaction still running: the dispatch
 * that saw them asks for another one this long after, doubling while they wait, up to the max
 * (the sweep catches up anyway), rather than leaving them for the next commit or sweep.
 */
const HELD_RECHECK_MS = 100;
const HELD_RECHECK_MAX_MS = 5_000;
/** Attempts shown per delivery. */
const ATTEMPT_LOG = 20;
/**
 * An attempt this close to its time (by the database's clock) is sent: a queue's delayed job and
 * the database's clock may disagree by a little, and waiting again for that little is no use.
 */
const NOT_DUE_TOLERANCE_MS = 250;

const seconds = (date: Date | null) => (date ? toUnixSeconds(date) : null);

/**
 * The previous secrets still signing at `now`, as an answer shows them (no secret): latest first,
 * the order retireSecret stores them in.
 */
function previousSecretsShown(previous: readonly PreviousSecret[], now: Date) {
  return previous.filter((p) => p.expiresAt > now).map((p) => ({ expiresAt: toUnixSeconds(p.expiresAt) }));
}

function toWebhook(row: WebhookRow, now: Date): Webhook {
  const previous = previousSecretsShown(repo.previousSecretsOf(row), now);
  return {
    id: row.id,
    organizationId: row.organization_id,
    url: row.url,
    description: row.description,
    eventTypes: row.event_types as EventType[],
    enabled: row.enabled,
    disabledReason: row.disabled_reason,
    disabledAt: seconds(row.disabled_at),
    failingSince: seconds(row.failing_since),
    lastSuccessAt: seconds(row.last_success_at),
    previousSecretExpiresAt: previous[0]?.expiresAt ?? null,
    previousSecrets: previous,
    createdAt: toUnixSeconds(row.created_at),
    updatedAt: toUnixSeconds(row.updated_at),
  };
}

const publicDeliveryId = (id: string) => `dlv_${id}`;
const internalId = (publicId: string) => publicId.slice(publicId.indexOf('_') + 1);

export class SecretLimitError extends DomainError {
  constructor(id: string, firstStops: Date) {
    super(
      'WEBHOOK_SECRET_LIMIT',
      `webhook ${id} has ${MAX_PREVIOUS_SECRETS} previous secrets still signing deliveries (the first stops at ` +
        `${firstStops.toISOString()}): rotate with {"previousSecretExpiresIn": 0} to stop them now, or later`,
      { maxPreviousSecrets: MAX_PREVIOUS_SECRETS, firstStopsAt: toUnixSeconds(firstStops) },
    );
  }
}

/** An organization that has as many endpoints as it may (WEBHOOKS_PER_ORGANIZATION): one must go first. */
export class WebhookLimitError extends DomainError {
  constructor(limit: number) {
    super(
      'WEBHOOK_LIMIT',
      `the organization has ${limit} webhook endpoints, the most it may have: delete one first (or subscribe an existing one to more event types)`,
      { limit },
    );
  }
}

export class WebhookDisabledError extends DomainError {
  constructor(id: string) {
    super('WEBHOOK_DISABLED', `webhook ${id} is disabled; turn it on with PATCH {"enabled": true} first`);
  }
}

/**
 * Webhook endpoints of an organization, and the delivery of its events to them: a dispatch job
 * fans new events out into pending deliveries, one job per delivery sends it (Standard Webhooks
 * headers and signatures) and keeps its attempts, retried on the delivery's own schedule;
 * the periodic sweep makes sure nothing is stranded (docs/events.md).
 */
export function createWebhooksService({
  db,
  clock,
  runner,
  audit,
  events: outbox,
  settings,
  send = postWebhook,
  onError,
}: WebhooksDeps) {
  const enqueueDelivery = (d: { id: string; run: number }) =>
    runner.enqueue(jobs.deliverWebhook, { deliveryId: d.id, run: d.run }, { jobKey: `${d.id}-${d.run}` });

  /** Queues deliveries after the commit that created them; one that cannot be queued waits for the sweep. */
  async function enqueueAll(deliveries: Array<{ id: string; run: number }>): Promise<void> {
    for (const d of deliveries) {
      try {
        await enqueueDelivery(d);
      } catch (error) {
        onError?.(error, { job: jobs.deliverWebhook.name, deliveryId: d.id });
        return; // the queue is away: the sweep queues them all again later
      }
    }
  }

  function checkTarget(url: string): void {
    if (settings.allowPrivateTargets) return;
    const problem = literalTargetProblem(url);
    if (problem) {
      throw new ValidationError([
        { path: 'body.url', message: `${problem}, refused (WEBHOOK_ALLOW_PRIVATE_TARGETS is off)` },
      ]);
    }
  }

  /**
   * The endpoint, or 404. Inside a transaction that goes on to write rows referring to it (a test
   * delivery, a replay, a retry), its row is held against a delete until that transaction ends: a
   * delete in progress is waited for and the endpoint is then not found, where the rows' foreign
   * key would otherwise fail once the delete commits.
   */
  async function requireWebhook(actor: Actor, id: string, executor: Kysely<DB> = db): Promise<WebhookRow> {
    const row = await repo.findWebhook(executor, actor.organizationId, id, executor.isTransaction ? 'key' : undefined);
    if (!row) throw new NotFoundError(`webhook ${id} is not known`);
    return row;
  }

  async function toDeliveries(rows: repo.DeliveryListRow[], executor: Kysely<DB> = db): Promise<Delivery[]> {
    const attempts = await repo.attemptsOf(
      executor,
      rows.map((r) => r.id),
      ATTEMPT_LOG,
    );
    return rows.map((r) => ({
      id: publicDeliveryId(r.id),
      webhookId: r.webhook_id,
      eventId: publicEventId(r.event_id),
      eventType: r.event_type as EventType,
      status: r.status,
      attempts: r.attempts,
      nextAttemptAt: r.status === 'pending' ? seconds(r.next_attempt_at) : null,
      lastStatusCode: r.last_status_code,
      lastError: r.last_error,
      deliveredAt: seconds(r.delivered_at),
      createdAt: toUnixSeconds(r.created_at),
      attemptLog: attempts
        .filter((a) => a.delivery_id === r.id)
        .map((a) => ({
          attempt: a.attempt,
          statusCode: a.status_code,
          durationMs: a.duration_ms,
          error: a.error,
          at: toUnixSeconds(a.created_at),
        })),
    }));
  }

  /** Turns the endpoint off for failing for days, with an event saying so, in one transaction. */
  async function disableFailing(trx: Kysely<DB>, webhookId: string, attempt: SendResult, now: Date) {
    const days = Math.round(settings.disableAfterMs / 86_400_000);
    const reason = `no successful delivery for ${days > 0 ? `${days} day(s)` : `${settings.disableAfterMs} ms`}`;
    const disabled = await repo.disableEndpoint(trx, webhookId, reason, now);
    if (!disabled) return false;
    const actor = systemActor(disabled.organization_id);
    await outbox.append(
      trx,
      actor,
      'webhook.disabled',
      null,
      {
        webhookId,
        reason,
        failingSince: toUnixSeconds(disabled.failing_since ?? now),
        lastStatusCode: attempt.statusCode,
        lastError: attempt.error,
      },
      now,
    );
    await audit.append(trx, actor, 'webhook.disabled', null, { webhookId, reason }, now);
    return true;
  }

  let recheck: ReturnType<typeof setTimeout> | undefined;
  let recheckDelay = HELD_RECHECK_MS;
  /** Asks for one more dispatch soon while events wait above the horizon (HELD_RECHECK_MS). */
  function recheckHeld(held: boolean): void {
    if (!held) {
      recheckDelay = HELD_RECHECK_MS;
      return;
    }
    if (recheck) return;
    recheck = setTimeout(() => {
      recheck = undefined;
      outbox.committed();
    }, recheckDelay).unref();
    recheckDelay = Math.min(recheckDelay * 2, HELD_RECHECK_MAX_MS);
  }

  /** Fans finished events out to the subscriptions, then queues the deliveries it created. */
  async function dispatch(): Promise<{ events: number; deliveries: number }> {
    let total = 0;
    let created = 0;
    for (let round = 0; round < FAN_OUT_ROUNDS; round++) {
      const now = clock();
      const batch = await db.transaction().execute(async (trx) => {
        await events.lockDispatch(trx);
        return events.fanOut(trx, FAN_OUT_BATCH, now);
      });
      total += batch.events;
      created += batch.deliveries.length;
      await enqueueAll(batch.deliveries);
      if (batch.fullest < FAN_OUT_BATCH) {
        recheckHeld(batch.held);
        return { events: total, deliveries: created };
      }
    }
    // More remains: the next dispatch continues.
    outbox.committed();
    return { events: total, deliveries: created };
  }

  return {
    /**
     * `executor`: an idempotent request's transaction, which also stores the answer, the secret
     * it shows included (the endpoint's own row keeps that secret too, to sign with).
     */
    async create(actor: Actor, input: CreateWebhookInput, executor: Kysely<DB> = db) {
      checkTarget(input.url);
      const secret = newSecret();
      const { row, now } = await inTransaction(db, executor, async (trx) => {
        // The organization's first webhook: its events are fanned out from now on. Its time is
        // taken after that: an event committed before the position was set is older than it.
        await events.startDispatch(trx, actor.organizationId);
        // Counted under the lock startDispatch took: two creations at once cannot both pass the limit.
        const limit = settings.perOrganization;
        if (limit !== undefined && (await repo.countWebhooks(trx, actor.organizationId)) >= limit) {
          throw new WebhookLimitError(limit);
        }
        const now = clock();
        const row = await repo.insertWebhook(trx, {
          id: newWebhookId(),
          organizationId: actor.organizationId,
          url: input.url,
          description: input.description ?? null,
          eventTypes: input.eventTypes,
          secret,
          now,
        });
        await audit.append(
          trx,
          actor,
          'webhook.created',
          null,
          { webhookId: row.id, url: row.url, eventTypes: row.event_types },
          now,
        );
        return { row, now };
      });
      return { ...toWebhook(row, now), secret };
    },

    async list(actor: Actor) {
      const now = clock();
      return { webhooks: (await repo.listWebhooks(db, actor.organizationId)).map((r) => toWebhook(r, now)) };
    },

    async get(actor: Actor, id: string) {
      return toWebhook(await requireWebhook(actor, id), clock());
    },

    async update(actor: Actor, id: string, input: UpdateWebhookInput) {
      if (input.url !== undefined) checkTarget(input.url);
      const now = clock();
      const row = await db.transaction().execute(async (trx) => {
        const row = await repo.updateWebhook(trx, actor.organizationId, id, input, now);
        if (!row) throw new NotFoundError(`webhook ${id} is not known`);
        // Turned off by hand: nothing more is sent to it.
        if (input.enabled === false) await repo.failPending(trx, id, 'the endpoint was disabled');
        await audit.append(
          trx,
          actor,
          'webhook.updated',
          null,
          { webhookId: id, changed: Object.keys(input).sort(), url: row.url, enabled: row.enabled },
          now,
        );
        return row;
      });
      return toWebhook(row, now);
    },

    async remove(actor: Actor, id: string) {
      const now = clock();
      const row = await db.transaction().execute(async (trx) => {
        // After any fan-out under way and before the next: one that read the endpoint before this
        // delete commits would otherwise fail on its deliveries' foreign key, for every organization.
        await events.lockDispatch(trx);
        const row = await repo.deleteWebhook(trx, actor.organizationId, id);
        if (!row) throw new NotFoundError(`webhook ${id} is not known`);
        await audit.append(trx, actor, 'webhook.deleted', null, { webhookId: id, url: row.url }, now);
        return row;
      });
      return toWebhook(row, now);
    },

    /**
     * A new secret. The one it replaces keeps signing (one more signature per delivery) for 24
     * hours, or for `previousSecretExpiresIn` seconds, which no earlier previous secret outlives
     * either; 0 stops them all now. Each previous secret keeps its own time otherwise.
     */
    async rotateSecret(actor: Actor, id: string, input: RotateSecretInput, executor: Kysely<DB> = db) {
      const now = clock();
      const secret = newSecret();
      const keepMs =
        input?.previousSecretExpiresIn === undefined ? PREVIOUS_SECRET_VALID_MS : input.previousSecretExpiresIn * 1000;
      // On the whole second answered as previousSecretExpiresAt (answers round down): the replaced
      // secret signs no delivery past it. No time at all stops it now, not at the next second.
      const until = keepMs === 0 ? now : expiryAfter(now, keepMs);
      const previous = await inTransaction(db, executor, async (trx) => {
        const row = await repo.findWebhook(trx, actor.organizationId, id, 'update');
        if (!row) throw new NotFoundError(`webhook ${id} is not known`);
        const stored = repo.previousSecretsOf(row);
        const previous = retireSecret(stored, row.secret, until, now);
        if (previous.length > MAX_PREVIOUS_SECRETS) {
          // When the first of those signing now stops: then a rotation like this one goes through.
          const stops = stored.map((p) => p.expiresAt.getTime()).filter((t) => t > now.getTime());
          throw new SecretLimitError(id, new Date(Math.min(...stops)));
        }
        await repo.setSecrets(trx, actor.organizationId, id, secret, previous, now);
        const stopsAt = toUnixSeconds(until);
        await audit.append(
          trx,
          actor,
          'webhook.secret_rotated',
          null,
          { webhookId: id, previousStopsAt: stopsAt },
          now,
        );
        return previous;
      });
      return {
        id,
        secret,
        previousSecretExpiresAt: toUnixSeconds(until),
        previousSecrets: previousSecretsShown(previous, now),
      };
    },

    /**
     * Sends a `webhook.test` event to this endpoint only. `executor`: an idempotent request's
     * transaction; `afterCommit` queues the delivery once it has committed.
     */
    async test(
      actor: Actor,
      id: string,
      executor: Kysely<DB> = db,
      afterCommit: (effect: () => void) => void = (effect) => effect(),
    ) {
      const now = clock();
      const created = await inTransaction(db, executor, async (trx) => {
        const row = await requireWebhook(actor, id, trx);
        if (!row.enabled) throw new WebhookDisabledError(id);
        const eventId = await events.insertEvent(
          trx,
          { organizationId: actor.organizationId, at: now },
          'webhook.test',
          null,
          { webhookId: id, message: 'a test event sent by POST /api/webhooks/:id/test' },
        );
        const delivery = await repo.insertDelivery(trx, {
          organizationId: actor.organizationId,
          webhookId: id,
          eventId,
          now,
        });
        await audit.append(trx, actor, 'webhook.tested', null, { webhookId: id, eventId: publicEventId(eventId) }, now);
        return { eventId, delivery };
      });
      afterCommit(() => void enqueueAll([created.delivery]));
      return {
        eventId: publicEventId(created.eventId),
        deliveryId: publicDeliveryId(created.delivery.id),
        status: 'pending' as const,
      };
    },

    async deliveries(actor: Actor, id: string, query: DeliveriesQuery) {
      await requireWebhook(actor, id);
      const rows = await repo.listDeliveries(db, {
        webhookId: id,
        beforeId: query.cursor === undefined ? undefined : idFromCursor(query.cursor),
        status: query.status,
        limit: query.limit,
      });
      const page = rows.slice(0, query.limit);
      const last = page[page.length - 1];
      return {
        deliveries: await toDeliveries(page),
        nextCursor: rows.length > query.limit && last ? idCursor(last.id) : null,
      };
    },

    /**
     * Sends one delivery again now, whatever its state (a pending one's schedule is replaced).
     * `executor` and `afterCommit` as for `test`.
     */
    async retry(
      actor: Actor,
      id: string,
      deliveryId: string,
      executor: Kysely<DB> = db,
      afterCommit: (effect: () => void) => void = (effect) => effect(),
    ): Promise<Delivery> {
      const now = clock();
      const restarted = await inTransaction(db, executor, async (trx) => {
        const row = await requireWebhook(actor, id, trx);
        if (!row.enabled) throw new WebhookDisabledError(id);
        const restarted = await repo.restartDelivery(trx, id, internalId(deliveryId), now);
        if (!restarted) throw new NotFoundError(`delivery ${deliveryId} of webhook ${id} is not known`);
        await audit.append(trx, actor, 'webhook.delivery_retried', null, { webhookId: id, deliveryId }, now);
        return restarted;
      });
      // As restarted, before its job can run: the answer says it is queued again.
      const row = await repo.findDelivery(executor, id, restarted.id);
      afterCommit(() => void enqueueAll([restarted]));
      if (!row) throw new NotFoundError(`delivery ${deliveryId} of webhook ${id} is not known`);
      const [shown] = await toDeliveries([row], executor);
      return shown as Delivery;
    },

    /**
     * Sends the organization's events of [since, until) to this endpoint again (those it has not
     * received). `executor` and `afterCommit` as for `test`.
     */
    async replay(
      actor: Actor,
      id: string,
      input: ReplayInput,
      executor: Kysely<DB> = db,
      afterCommit: (effect: () => void) => void = (effect) => effect(),
    ) {
      const now = clock();
      const until = input.until === undefined ? null : new Date(input.until * 1000);
      const since = new Date(input.since * 1000);
      const result = await inTransaction(db, executor, async (trx) => {
        const row = await requireWebhook(actor, id, trx);
        if (!row.enabled) throw new WebhookDisabledError(id);
        const result = await repo.replay(trx, {
          organizationId: actor.organizationId,
          webhookId: id,
          eventTypes: row.event_types,
          since,
          until,
          now,
        });
        await audit.append(
          trx,
          actor,
          'webhook.replayed',
          null,
          { webhookId: id, since: input.since, until: input.until ?? null, queued: result.deliveries.length },
          now,
        );
        return result;
      });
      afterCommit(() => void enqueueAll(result.deliveries));
      const complete = !result.more;
      return {
        queued: result.deliveries.length,
        skipped: result.skipped,
        complete,
        until: complete || !result.last ? (input.until ?? toUnixSeconds(now)) : toUnixSeconds(result.last),
      };
    },

    dispatch,

    /** Fans out what is waiting and queues again the due deliveries whose job was lost. */
    async sweep() {
      const fanned = await dispatch();
      const due = await repo.stranded(db, new Date(clock().getTime() - STRANDED_AFTER_MS), STRANDED_BATCH);
      await enqueueAll(due);
      return { ...fanned, requeued: due.length };
    },

    /**
     * One attempt of a delivery (the `webhooks.deliver` job): sends it with Standard Webhooks
     * headers, stores the attempt, and asks to run again at the next time of its schedule
     * (RunAgainLater) unless it succeeded or has no attempt left. A delivery of another run, or one
     * no longer pending, is left alone: a job delivered twice or a superseded one does nothing.
     */
    async deliver(
      deliveryId: string,
      run: number,
    ): Promise<{ status: 'pending' | 'succeeded' | 'failed' | 'gone'; attempts: number }> {
      const target = await repo.deliveryTarget(db, deliveryId);
      if (!target) return { status: 'gone' as const, attempts: 0 };
      if (target.run !== run || target.status !== 'pending')
        return { status: target.status, attempts: target.attempts };
      if (!target.enabled) {
        // Fanned out as the endpoint was being disabled: this delivery fails, unless the endpoint
        // was turned on again since it was read (then it runs again and is sent).
        if (await repo.failIfDisabled(db, deliveryId, run, 'the endpoint is disabled'))
          return { status: 'failed' as const, attempts: target.attempts };
        throw new RunAgainLater(1_000, 'the endpoint was turned on again');
      }
      // Run again before its wait was over (its worker was lost after storing the last attempt,
      // before the job went back to wait): it waits out the rest.
      if (target.wait_ms > NOT_DUE_TOLERANCE_MS)
        throw new RunAgainLater(target.wait_ms, `attempt ${target.attempts + 1} is not due yet`);
      const sentAt = clock();
      const messageId = publicEventId(target.event_id);
      const timestamp = Math.floor(sentAt.getTime() / 1000);
      const body = JSON.stringify({
        ...toEvent({
          id: target.event_id,
          txid: '0',
          organization_id: target.organization_id,
          type: target.type,
          agent: target.agent,
          data: target.data,
          created_at: target.created_at,
        }),
        timestamp: target.created_at.toISOString(),
      });
      const secrets = signingSecrets(target.secret, repo.previousSecretsOf(target), sentAt);
      const result = await send(
        target.url,
        {
          'content-type': 'application/json',
          'user-agent': 'Vouch-Webhooks/1',
          'webhook-id': messageId,
          'webhook-timestamp': String(timestamp),
          'webhook-signature': signatureHeader(secrets, messageId, timestamp, body),
        },
        body,
        { timeoutMs: settings.timeoutMs, allowPrivateTargets: settings.allowPrivateTargets },
      );
      const now = clock();
      const attempt = target.attempts + 1;
      const ok = delivered(result.statusCode);
      const delay = ok ? null : retryDelayMs(attempt);
      const status: DeliveryStatus = ok ? 'succeeded' : delay === null ? 'failed' : 'pending';
      const outcome = await db.transaction().execute(async (trx) => {
        // The endpoint's row before the delivery's, in the order disabling and deleting lock them.
        await repo.lockEndpoint(trx, target.webhook_id);
        const stored = await repo.recordAttempt(trx, {
          deliveryId,
          run,
          attempt,
          statusCode: result.statusCode,
          durationMs: result.durationMs,
          error: result.error,
          status,
          nextAttemptAt: delay === null ? null : new Date(now.getTime() + delay),
          waitMs: delay,
          now,
        });
        if (!stored) return { stored, disabled: false, state: await repo.deliveryState(trx, deliveryId) };
        const endpoint = await repo.markEndpoint(trx, target.webhook_id, ok, now);
        const failingFor = endpoint?.failing_since ? now.getTime() - endpoint.failing_since.getTime() : 0;
        const disabled =
          !ok && endpoint?.enabled === true && failingFor >= settings.disableAfterMs
            ? await disableFailing(trx, target.webhook_id, result, now)
            : false;
        return { stored, disabled, state: undefined };
      });
      if (outcome.disabled) outbox.committed();
      // Another run stored this attempt, or the delivery was failed or restarted meanwhile.
      if (!outcome.stored) return outcome.state ?? { status: 'gone' as const, attempts: 0 };
      if (status === 'pending' && !outcome.disabled)
        throw new RunAgainLater(delay as number, `attempt ${attempt} failed`);
      return { status: outcome.disabled ? ('failed' as const) : status, attempts: attempt };
    },
  };
}

export type WebhooksService = ReturnType<typeof createWebhooksService>;

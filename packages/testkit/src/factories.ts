import { randomBytes } from 'node:crypto';
import type { App } from '@vouch/api';

export function randomAddress(): string {
  return `0x${randomBytes(20).toString('hex')}`;
}

export function randomTxHash(): string {
  return `0x${randomBytes(32).toString('hex')}`;
}

export async function post(app: App, url: string, body: unknown, headers: Record<string, string> = {}) {
  return app.inject({ method: 'POST', url, payload: body as object, headers });
}

export async function get(app: App, url: string) {
  return app.inject({ method: 'GET', url });
}

/** Registers a new agent and returns its address. */
export async function createAgent(app: App, overrides: { address?: string; owner?: string } = {}): Promise<string> {
  const address = overrides.address ?? randomAddress();
  const res = await post(app, '/api/agents/register', { address, ...(overrides.owner && { owner: overrides.owner }) });
  if (res.statusCode !== 201) throw new Error(`register failed: ${res.statusCode} ${res.body}`);
  return address;
}

/** Registers an agent with a budget. */
export async function createAgentWithBudget(
  app: App,
  limits: { dailyLimit: string; monthlyLimit: string; perTxLimit?: string },
): Promise<string> {
  const address = await createAgent(app);
  const res = await post(app, `/api/budgets/${address}/set`, limits);
  if (res.statusCode !== 200) throw new Error(`budget set failed: ${res.statusCode} ${res.body}`);
  return address;
}

export async function recordTx(
  app: App,
  agent: string,
  fields: { amount?: string; type?: number; success?: boolean; timestamp?: number; counterparty?: string } = {},
) {
  const res = await post(app, '/api/transactions/record', {
    agent,
    txHash: randomTxHash(),
    amount: fields.amount ?? '1000',
    type: fields.type ?? 0,
    ...(fields.success !== undefined && { success: fields.success }),
    ...(fields.timestamp !== undefined && { timestamp: fields.timestamp }),
    ...(fields.counterparty !== undefined && { counterparty: fields.counterparty }),
  });
  if (res.statusCode !== 201) throw new Error(`record failed: ${res.statusCode} ${res.body}`);
  return res.json().data;
}

/** Every scope a key can have. */
export const ALL_SCOPES = ['read', 'spend', 'manage', 'approve', 'score', 'admin'] as const;

/** The `Authorization` header of a request made with the API key `key`. */
export const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

/**
 * A new organization created by the operator (`adminKey` is ADMIN_API_KEY) and a key of it with
 * `scopes`; returns the key's secret. Call it once per organization id.
 */
export async function createOrganizationKey(
  app: App,
  adminKey: string,
  id: string,
  scopes: readonly string[] = ALL_SCOPES,
): Promise<string> {
  const org = await post(app, '/api/organizations', { id, name: id }, bearer(adminKey));
  if (org.statusCode !== 201 && org.statusCode !== 409)
    throw new Error(`organization failed: ${org.statusCode} ${org.body}`);
  return createKey(app, adminKey, { name: `${id}-key`, scopes, organizationId: id });
}

/** A key created with `adminKey` (the operator's, or an organization's admin key); returns its secret. */
export async function createKey(
  app: App,
  adminKey: string,
  body: { name: string; scopes: readonly string[]; organizationId?: string },
): Promise<string> {
  const res = await post(app, '/api/keys', body, bearer(adminKey));
  if (res.statusCode !== 201) throw new Error(`key failed: ${res.statusCode} ${res.body}`);
  return res.json().data.key as string;
}

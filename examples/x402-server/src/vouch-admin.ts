/**
 * What the operator of the example does in Vouch once, over its HTTP API (docs/tenancy.md): an
 * organization for the shop, its keys, the paying agent registered by it, and a budget for the
 * agent in the token the shop is paid in.
 */

async function call<T>(base: string, key: string, method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body !== undefined && { 'content-type': 'application/json' }) },
    ...(body !== undefined && { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(10_000),
  });
  const json = (await res.json()) as { success: boolean; data: T; error?: { code: string; message: string } };
  if (!json.success) throw new Error(`${method} ${path}: ${res.status} ${json.error?.code}: ${json.error?.message}`);
  return json.data;
}

export interface ShopKeys {
  /** `spend` and `score`: what the resource server's hooks use. */
  server: string;
  /** `manage`: budgets, agents. */
  manage: string;
  /** `read`: what an agent needs to check its own budget. */
  read: string;
}

/** Creates the organization `id` and its keys with the operator's key. */
export async function createShop(base: string, adminKey: string, id: string): Promise<ShopKeys> {
  await call(base, adminKey, 'POST', '/api/organizations', { id, name: id });
  const key = async (name: string, scopes: string[]) =>
    (await call<{ key: string }>(base, adminKey, 'POST', '/api/keys', { name, scopes, organizationId: id })).key;
  return {
    server: await key(`${id}-x402-server`, ['spend', 'score']),
    manage: await key(`${id}-manage`, ['manage']),
    read: await key(`${id}-agent`, ['read']),
  };
}

/** Registers `agent` (owned by the key's organization from then on) and sets its budget in `asset`. */
export async function registerAgentWithBudget(
  base: string,
  manageKey: string,
  agent: string,
  budget: { asset: string; dailyLimit: string; monthlyLimit: string; perTxLimit?: string },
): Promise<void> {
  await call(base, manageKey, 'POST', '/api/agents/register', { address: agent });
  await call(base, manageKey, 'POST', `/api/budgets/${agent}/set`, budget);
}

/** A read of the Vouch API with `key` (the envelope's `data`). */
export function read<T>(base: string, key: string, path: string): Promise<T> {
  return call<T>(base, key, 'GET', path);
}

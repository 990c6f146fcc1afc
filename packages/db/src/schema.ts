import type { ColumnType, Generated, Insertable, Selectable, Updateable } from 'kysely';

/** numeric(78,0) travels as a decimal string in both drivers. */
type Uint256 = ColumnType<string, string | bigint, string | bigint>;
type Timestamp = ColumnType<Date, Date | string, Date | string>;
type CreatedAt = ColumnType<Date, Date | string | undefined, never>;
type Json = ColumnType<Record<string, unknown>, string, string>;

export interface AgentsTable {
  address: string;
  is_registered: boolean;
  /** The organization that registered the agent and may change its score, owner and metadata; null while only observed. */
  organization_id: string | null;
  owner: string | null;
  owner_changed_at: Timestamp | null;
  metadata: Json | null;
  score: number;
  first_seen_at: Timestamp;
  registered_at: Timestamp | null;
  updated_at: Timestamp;
}

export type ScoreSource = 'manual' | 'batch' | 'model';

export interface ScoreEventsTable {
  id: Generated<string>;
  agent: string;
  old_score: number;
  new_score: number;
  source: ScoreSource;
  reason: string | null;
  created_at: Timestamp;
  job_id: string | null;
  /** Who set a manual or batch score (null for the model's changes). */
  organization_id: string | null;
  actor_key_id: string | null;
}

export interface BudgetsTable {
  organization_id: string;
  agent: string;
  /** '' for the default unit (wei); otherwise a CAIP-19 asset id, amounts in its atomic units. */
  asset: Generated<string>;
  daily_limit: Uint256;
  monthly_limit: Uint256;
  per_tx_limit: Uint256;
  daily_spent: Uint256;
  monthly_spent: Uint256;
  /** Reserved by holds made in the current day and month windows. */
  daily_held: ColumnType<string, string | bigint | undefined, string | bigint>;
  monthly_held: ColumnType<string, string | bigint | undefined, string | bigint>;
  day_start: Timestamp;
  month_start: Timestamp;
  last_refusal: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/** Per budget and period, the highest threshold (a percentage) announced in the window starting at `period_start`. */
export interface BudgetAlertsTable {
  organization_id: string;
  agent: string;
  asset: string;
  period: 'daily' | 'monthly';
  period_start: Timestamp;
  level: number;
}

export interface SpendsTable {
  id: Generated<string>;
  organization_id: string;
  agent: string;
  /** The API key that spent (null without one). */
  actor_key_id: string | null;
  amount: Uint256;
  accepted: boolean;
  reason: string | null;
  created_at: Timestamp;
  /** `spend` (debited at once), `capture` (of a hold), `authorization` (a refused hold). */
  kind: Generated<'spend' | 'capture' | 'authorization'>;
  asset: Generated<string>;
  authorization_id: string | null;
  refunded: ColumnType<string, string | bigint | undefined, string | bigint>;
  counterparty: string | null;
  /** The windows the row counts in (a refund restores them while they are current). */
  day_start: Timestamp;
  month_start: Timestamp;
}

export type AuthorizationStatus = 'pending_approval' | 'held' | 'captured' | 'voided' | 'expired';

export interface AuthorizationsTable {
  id: Generated<string>;
  organization_id: string;
  agent: string;
  asset: string;
  amount: Uint256;
  captured: ColumnType<string, string | bigint | undefined, string | bigint>;
  counterparty: string | null;
  metadata: Json | null;
  status: AuthorizationStatus;
  day_start: Timestamp;
  month_start: Timestamp;
  expires_at: Timestamp;
  created_at: Timestamp;
  updated_at: Timestamp;
  captured_at: Timestamp | null;
  released_at: Timestamp | null;
  decision_id: string | null;
  actor_key_id: string | null;
}

export interface RefundsTable {
  id: Generated<string>;
  organization_id: string;
  agent: string;
  spend_id: string;
  amount: Uint256;
  restored_daily: Uint256;
  restored_monthly: Uint256;
  reason: string | null;
  actor_key_id: string | null;
  created_at: Timestamp;
}

export interface PoliciesTable {
  organization_id: string;
  /** '' for the organization's default policy. */
  agent: string;
  version: number;
  /** null: the policy was deleted in this version. */
  rules: Json | null;
  actor_key_id: string | null;
  created_at: Timestamp;
  /** Generated `<organization>/<agent>`: the read cache's key. */
  cache_key: Generated<string>;
}

export interface DecisionsTable {
  /** A random UUID, made by the API. */
  id: string;
  organization_id: string;
  agent: string;
  amount: Uint256;
  asset: string;
  counterparty: string | null;
  category: string | null;
  context: Json | null;
  decision: 'allow' | 'deny' | 'review';
  reasons: Json;
  /** What the decision saw: score, confidence, sanctions and list, budget, policy version and rule, model version. */
  facts: Json;
  authorization_id: string | null;
  approval_id: string | null;
  actor_key_id: string | null;
  request_id: string | null;
  created_at: Timestamp;
}

export type ApprovalStatus = 'pending' | 'approved' | 'denied' | 'expired' | 'redeemed';

export interface ApprovalsTable {
  id: Generated<string>;
  organization_id: string;
  agent: string;
  decision_id: string;
  amount: Uint256;
  asset: string;
  counterparty: string | null;
  category: string | null;
  status: ApprovalStatus;
  authorization_id: string | null;
  requested_by_key_id: string | null;
  decided_by_key_id: string | null;
  note: string | null;
  expires_at: Timestamp;
  decided_at: Timestamp | null;
  redeemed_at: Timestamp | null;
  redeemed_decision_id: string | null;
  created_at: Timestamp;
}

export interface TransactionsTable {
  id: Generated<string>;
  agent: string;
  tx_hash: string;
  amount: Uint256;
  /** CAIP-19 id of what moved, `amount` in its atomic units; '' for the native unit (wei). */
  asset: Generated<string>;
  type: number;
  success: boolean;
  counterparty: string | null;
  occurred_at: Timestamp;
  recorded_at: Timestamp;
  /** Dated before its agent was first seen (self-reported history from before Vouch knew it). */
  backdated: Generated<boolean>;
  /** What the chain said about it (docs/api.md "Transactions"); `unverified` when no chain is configured. */
  chain_status: Generated<ChainStatus>;
  /** Why: the disagreeing fields of a mismatch, the node's error, the block of a verified one. */
  chain_detail: string | null;
  chain_checked_at: Timestamp | null;
  /** Verified by a transfer of this token though it named no asset: not native volume. */
  moved_token: string | null;
}

export type ChainStatus = 'unverified' | 'pending' | 'verified' | 'mismatch' | 'not_found' | 'unreachable';

export interface IdempotencyKeysTable {
  organization_id: string;
  scope: string;
  key: string;
  request_hash: string;
  status_code: number;
  response: Json;
  created_at: Timestamp;
  expires_at: Timestamp;
}

export interface VerificationsTable {
  id: Generated<string>;
  agent: string;
  status: string;
  passed: number;
  total: number;
  score: number;
  grade: string;
  checks: Json;
  check_details: Json;
  /** passed | failed | not_run per check (null for verifications stored before states were kept). */
  check_states: Json | null;
  /** The sanctions list screened against (null for verifications before it was kept). */
  sanctions_list: Json | null;
  created_at: Timestamp;
}

/** Per address, the status of its last stored verification in commit order (announcements compare with it). */
export interface VerificationHeadsTable {
  agent: string;
  status: string;
  /** The status the last verification replaced (null: it was the first). */
  previous_status: string | null;
  updated_at: Timestamp;
}

export interface SanctionsSnapshotsTable {
  id: Generated<string>;
  name: string;
  snapshot_date: string;
  entries: number;
  /** SHA-256 of the content: one `address:list,list` line per address, in address order. */
  content_hash: string | null;
  is_active: boolean;
  imported_at: CreatedAt;
  /** The snapshot active when this one was imported: what its re-scoring compares with. */
  previous_id: string | null;
  /** When the agents whose status this import changed were re-scored; null: still owed. */
  rescored_at: Timestamp | null;
}

export interface SanctionsEntriesTable {
  snapshot_id: string;
  address: string;
  lists: string[];
}

export interface SanctionsScreeningsTable {
  id: Generated<string>;
  address: string;
  sanctioned: boolean;
  matched_lists: string[];
  snapshot_id: string | null;
  created_at: Timestamp;
}

export interface AnomalyChecksTable {
  id: Generated<string>;
  /** The organization that asked for the check: only it reads it back (enrich). Null: made before checks had one, on an install of several. */
  organization_id: string | null;
  agent: string;
  tx_hash: string | null;
  amount: Uint256 | null;
  /** The asset `amount` is in ('' the chain's native unit). Null: stored before the asset was kept. */
  asset: string | null;
  type: number | null;
  anomaly_detected: boolean;
  risk_score: number;
  severity: string;
  flags: Json;
  factors: Json;
  created_at: Timestamp;
}

export interface ApiKeysTable {
  id: string;
  organization_id: string;
  name: string;
  key_hash: string;
  scopes: string[];
  expires_at: Timestamp | null;
  revoked_at: Timestamp | null;
  last_used_at: Timestamp | null;
  created_at: CreatedAt;
}

export interface OrganizationsTable {
  id: string;
  name: string;
  /** Requests per minute shared by all the organization's keys; null → RATE_LIMIT_ORGANIZATION. */
  rate_limit_per_minute: number | null;
  created_at: CreatedAt;
}

export type AuditActor = 'key' | 'admin' | 'anonymous' | 'system';

export interface AuditLogTable {
  organization_id: string;
  seq: ColumnType<string, string | number | bigint, never>;
  action: string;
  actor: AuditActor;
  actor_key_id: string | null;
  target: string | null;
  request_id: string | null;
  created_at: Timestamp;
  /** The JSON text the hash covers: every column above and the details. */
  entry: string;
  prev_hash: string;
  hash: string;
}

export interface AuditHeadsTable {
  organization_id: string;
  seq: ColumnType<string, string | number | bigint, string | number | bigint>;
  prev_hash: string;
  hash: string;
}

/** int8 columns: the pg driver reads them as strings; queries that read them cast to text. */
type Int8 = ColumnType<string, string | number | bigint, string | number | bigint>;

export interface Erc8004CursorsTable {
  chain_id: Int8;
  /** The registry's address, lowercase. */
  registry: string;
  kind: 'identity' | 'reputation';
  /** The first block not yet indexed. */
  next_block: Int8;
  /** The hash of block next_block − 1 when it was indexed: another hash there later is a deeper reorganization. */
  last_block_hash: string | null;
  head_block: Int8 | null;
  last_ok_at: Timestamp | null;
  last_error: string | null;
  last_error_at: Timestamp | null;
  updated_at: Timestamp;
}

export interface Erc8004IdentitiesTable {
  chain_id: Int8;
  registry: string;
  agent_id: Uint256;
  owner: string;
  agent_uri: string;
  /** The verified wallet (reserved metadata `agentWallet`); null when unset (cleared on transfer). */
  agent_wallet: string | null;
  /** The address it was minted to (null: not known, indexed before this was kept). */
  minted_to: string | null;
  registered_block: Int8 | null;
  updated_block: Int8;
}

export type Erc8004FileStatus =
  | 'none'
  | 'pending'
  | 'fetched'
  | 'skipped'
  | 'unsupported'
  | 'unavailable'
  | 'invalid'
  | 'hash_mismatch';

export interface Erc8004FeedbackTable {
  chain_id: Int8;
  registry: string;
  agent_id: Uint256;
  client: string;
  feedback_index: Int8;
  /** int128 as a decimal string. */
  value: string;
  value_decimals: number;
  tag1: string;
  tag2: string;
  endpoint: string;
  feedback_uri: string;
  feedback_hash: string;
  revoked: Generated<boolean>;
  block_number: Int8;
  tx_hash: string;
  log_index: number;
  file_status: Erc8004FileStatus;
  file_detail: string | null;
  file_attempts: Generated<number>;
  file_checked_at: Timestamp | null;
  proof_of_payment: Json | null;
}

export interface Erc8004ResponsesTable {
  chain_id: Int8;
  tx_hash: string;
  log_index: number;
  registry: string;
  agent_id: Uint256;
  client: string;
  feedback_index: Int8;
  responder: string;
  response_uri: string;
  response_hash: string;
  block_number: Int8;
}

export interface Erc8004ExportsTable {
  id: string;
  organization_id: string;
  agent: string;
  chain_id: Int8;
  registry: string;
  agent_id: Uint256;
  client_address: string | null;
  value: Int8;
  value_decimals: number;
  tag1: string;
  tag2: string;
  endpoint: string;
  feedback_uri: string;
  feedback_hash: string;
  /** The feedback file, exactly the bytes feedbackHash covers. */
  file: string;
  tx_hash: string | null;
  created_at: Timestamp;
}

export interface EventsTable {
  id: Generated<string>;
  organization_id: string;
  type: string;
  agent: string | null;
  data: Json;
  created_at: Timestamp;
  /** The writing transaction (xid8, as text): events are read in its order (docs/events.md). */
  txid: Generated<string>;
}

export interface EventDispatchTable {
  organization_id: string;
  txid: string;
  event_id: string;
}

export interface WebhooksTable {
  id: string;
  organization_id: string;
  url: string;
  description: string | null;
  event_types: string[];
  secret: string;
  /** Secrets retired by a rotation that still sign, each until its own time (ISO 8601 `expiresAt`). */
  previous_secrets: ColumnType<Array<{ secret: string; expiresAt: string }>, string | undefined, string>;
  enabled: Generated<boolean>;
  disabled_reason: string | null;
  disabled_at: Timestamp | null;
  /** The first failed attempt since the last success (null while the endpoint answers). */
  failing_since: Timestamp | null;
  /** When it last failed an attempt: a failure after a quiet spell starts a new `failing_since`. */
  last_failure_at: Timestamp | null;
  last_success_at: Timestamp | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export type DeliveryStatus = 'pending' | 'succeeded' | 'failed';

export interface WebhookDeliveriesTable {
  id: Generated<string>;
  organization_id: string;
  webhook_id: string;
  event_id: string;
  status: Generated<DeliveryStatus>;
  /** Bumped each time the delivery is sent again (retry, replay): its job's id. */
  run: Generated<number>;
  attempts: Generated<number>;
  next_attempt_at: Timestamp | null;
  /**
   * The database's time (not the service's clock) before which the next attempt is not sent: a
   * job run again early waits out the rest of the retry schedule's wait.
   */
  not_before: Timestamp | null;
  last_status_code: number | null;
  last_error: string | null;
  last_attempt_at: Timestamp | null;
  delivered_at: Timestamp | null;
  created_at: Timestamp;
}

export interface WebhookAttemptsTable {
  id: Generated<string>;
  delivery_id: string;
  attempt: number;
  status_code: number | null;
  duration_ms: number;
  error: string | null;
  created_at: Timestamp;
}

export interface DB {
  agents: AgentsTable;
  score_events: ScoreEventsTable;
  budgets: BudgetsTable;
  budget_alerts: BudgetAlertsTable;
  spends: SpendsTable;
  transactions: TransactionsTable;
  idempotency_keys: IdempotencyKeysTable;
  verifications: VerificationsTable;
  verification_heads: VerificationHeadsTable;
  sanctions_snapshots: SanctionsSnapshotsTable;
  sanctions_entries: SanctionsEntriesTable;
  sanctions_screenings: SanctionsScreeningsTable;
  anomaly_checks: AnomalyChecksTable;
  api_keys: ApiKeysTable;
  organizations: OrganizationsTable;
  audit_log: AuditLogTable;
  audit_heads: AuditHeadsTable;
  authorizations: AuthorizationsTable;
  refunds: RefundsTable;
  policies: PoliciesTable;
  decisions: DecisionsTable;
  approvals: ApprovalsTable;
  erc8004_cursors: Erc8004CursorsTable;
  erc8004_identities: Erc8004IdentitiesTable;
  erc8004_feedback: Erc8004FeedbackTable;
  erc8004_responses: Erc8004ResponsesTable;
  erc8004_exports: Erc8004ExportsTable;
  events: EventsTable;
  event_dispatch: EventDispatchTable;
  webhooks: WebhooksTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_attempts: WebhookAttemptsTable;
}

export type AgentRow = Selectable<AgentsTable>;
export type NewAgent = Insertable<AgentsTable>;
export type AgentUpdate = Updateable<AgentsTable>;
export type BudgetRow = Selectable<BudgetsTable>;
export type AuthorizationRow = Selectable<AuthorizationsTable>;
export type SpendRow = Selectable<SpendsTable>;
export type DecisionRow = Selectable<DecisionsTable>;
export type ApprovalRow = Selectable<ApprovalsTable>;
export type TransactionRow = Selectable<TransactionsTable>;
export type IdempotencyRow = Selectable<IdempotencyKeysTable>;
export type EventRow = Selectable<EventsTable>;
export type WebhookRow = Selectable<WebhooksTable>;
export type DeliveryRow = Selectable<WebhookDeliveriesTable>;

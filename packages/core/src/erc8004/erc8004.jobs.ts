import type { jobs, Processor } from '@vouch/jobs';
import type { Services } from '../services.ts';

/** One indexer run over the ERC-8004 registries; scheduled by the runtime every ERC8004_INTERVAL_MS with a chain. */
export const erc8004IndexProcessor =
  (services: Services): Processor<typeof jobs.erc8004Index> =>
  () =>
    services.erc8004.index();

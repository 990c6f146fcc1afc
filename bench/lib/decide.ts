/** P8's payment, decided by `bench/run.ts` (runP8) and `bench/p8-apart.ts` alike. */

/** A policy like a customer's: a deny list, a review threshold, then allow a known-enough agent. */
export const P8_POLICY = {
  rules: [
    { name: 'blocked', action: 'deny', when: { counterpartyIn: [`0x${'d'.repeat(40)}`] } },
    { name: 'big', action: 'review', when: { amountAbove: '1000000000000000000000' } },
    { name: 'rest', action: 'allow', when: { agentScoreAtLeast: 100 } },
  ],
};

/** The decision asked for `agent`: allowed by the rule `rest`. */
export const p8Decision = (agent: string) => ({
  agent,
  amount: '1',
  counterparty: `0x${'c'.repeat(40)}`,
  category: 'compute',
});

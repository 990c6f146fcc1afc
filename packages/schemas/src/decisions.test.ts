import { describe, expect, it } from 'vitest';
import { policyBody } from './decisions.ts';

const withZone = (timeZone: string) => ({
  rules: [{ name: 'x', action: 'allow', when: { timeWindow: { timeZone } } }],
});

describe('a policy time window’s zone', () => {
  it('is an IANA name, signs inside it included', () => {
    for (const zone of ['UTC', 'Asia/Tokyo', 'Etc/GMT+5', 'Etc/GMT-14', 'America/Port-au-Prince']) {
      expect(policyBody.safeParse(withZone(zone)).success, zone).toBe(true);
    }
  });

  it('is not an offset, although Intl takes one, nor a name nobody knows', () => {
    for (const zone of ['+05:00', '-03', '\u221203:00', '+0530', 'Mars/Olympus']) {
      const result = policyBody.safeParse(withZone(zone));
      expect(result.success, zone).toBe(false);
      expect(result.error?.issues[0]?.message).toBe('is not a known IANA time zone');
    }
  });
});

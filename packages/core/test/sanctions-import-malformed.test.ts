import {
  BUNDLED_SANCTIONS_DIR,
  BUNDLED_SNAPSHOT_HASH,
  readListDirectory,
  type Services,
  unionLists,
} from '@vouch/core';
import type { Database } from '@vouch/db';
import { createTestDatabase, createTestRuntime } from '@vouch/testkit';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

// An sdn_advanced.xml that is not well-formed — a download cut off part-way, a file damaged in
// transit — is not OFAC's list: importing what could be read of it would delist every address in
// the part that is missing. Such a file must be refused, changing nothing.

let database: Database;
let services: Services;
let addresses: string[];
beforeAll(async () => {
  database = await createTestDatabase();
  ({ services } = await createTestRuntime(database, { loadSanctions: false }));
  await services.sanctions.restoreBundled({ force: true });
  addresses = [...unionLists(await readListDirectory(BUNDLED_SANCTIONS_DIR)).keys()];
});
afterAll(() => database?.close());
// Each case starts from the bundled list, whatever the one before it left active.
afterEach(() => services.sanctions.restoreBundled({ force: true }));

/** The bundled list as OFAC publishes it: one DistinctParty per address, in the advanced XML. */
function sdnAdvancedXml(list: string[]): string {
  const parties = list.map(
    (address, i) =>
      `<DistinctParty FixedRef="${i + 1}"><Profile ID="${i + 1}" PartySubTypeID="4">` +
      `<Feature ID="${i + 1}" FeatureTypeID="345"><FeatureVersion ID="${i + 1}" ReliabilityID="1">` +
      `<VersionDetail DetailTypeID="1432">${address}</VersionDetail></FeatureVersion></Feature>` +
      `</Profile></DistinctParty>\n`,
  );
  return (
    '<?xml version="1.0" encoding="utf-8"?>\n' +
    '<Sanctions xmlns="https://sanctionslistservice.ofac.treas.gov/api/PublicationPreview/exports/ADVANCED_XML">\n' +
    '<DateOfIssue><Year>2026</Year><Month>11</Month><Day>30</Day></DateOfIssue>\n' +
    '<ReferenceValueSets><FeatureTypeValues>' +
    '<FeatureType ID="345" FeatureTypeGroupID="1">Digital Currency Address - ETH</FeatureType>' +
    '</FeatureTypeValues></ReferenceValueSets>\n' +
    `<DistinctParties>\n${parties.join('')}</DistinctParties>\n` +
    '<SanctionsEntries></SanctionsEntries>\n</Sanctions>\n'
  );
}

const activeList = async () => {
  const snapshot = await services.sanctions.activeSnapshot();
  return { entries: snapshot?.entries, contentHash: snapshot?.content_hash };
};
const bundled = () => ({ entries: 156, contentHash: BUNDLED_SNAPSHOT_HASH });

describe('importing an sdn_advanced.xml that is not well-formed', () => {
  it('imports the whole file (the control)', async () => {
    const result = await services.sanctions.importXml(sdnAdvancedXml(addresses));
    expect(result).toMatchObject({ entries: 156, removed: [] });
    await services.sanctions.restoreBundled();
    expect(await activeList()).toEqual(bundled());
  });

  it('refuses a download cut off after 100 of its 156 parties, and keeps the active list', async () => {
    const whole = sdnAdvancedXml(addresses);
    let cut = 0;
    for (let i = 0; i < 100; i++) cut = whole.indexOf('</DistinctParty>\n', cut) + '</DistinctParty>\n'.length;
    const truncated = whole.slice(0, cut); // no </DistinctParties>, no </Sanctions>
    const outcome = await services.sanctions.importXml(truncated).then(
      (result) => ({ imported: { entries: result.entries, removed: result.removed.length } }),
      (error: Error) => ({ refused: error.message }),
    );
    expect(outcome).toHaveProperty('refused');
    expect(await activeList()).toEqual(bundled());
    const listed = await services.sanctions.screen(addresses[155] as string);
    expect(listed.state).toBe('listed');
  });

  it('refuses a file whose elements do not close as they open', async () => {
    const damaged = sdnAdvancedXml(addresses).replace('</DistinctParty>', '</DistinctPartx>');
    await expect(services.sanctions.importXml(damaged)).rejects.toThrow();
    expect(await activeList()).toEqual(bundled());
  });
});

describe('importing an sdn_advanced.xml whose DateOfIssue is no date', () => {
  it('refuses it, as --date refuses one, unless --date names the snapshot date', async () => {
    const xml = sdnAdvancedXml(addresses).replace('<Month>11</Month><Day>30</Day>', '<Month>2</Month><Day>30</Day>');
    await expect(services.sanctions.importXml(xml)).rejects.toThrow(/DateOfIssue/);
    expect(await activeList()).toEqual(bundled());
    expect(await services.sanctions.importXml(xml, '2026-02-28')).toMatchObject({ snapshotDate: '2026-02-28' });
  });
});

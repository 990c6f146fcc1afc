import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { diffSnapshots, evmAddressesOf, parseSdnAdvancedXml, unionLists } from './sanctions.model.ts';

const fixture = readFileSync(new URL('../../../../test/fixtures/sdn_advanced_small.xml', import.meta.url), 'utf8');

describe('list files', () => {
  it('keeps EVM addresses, lowercased, and skips other chains’ addresses and blank lines', () => {
    const text =
      '0xAbC0000000000000000000000000000000000001\nTXjVWnz5AfZrPZ8pZdaJy3i3nkgzkQ1Zn5\n\n 0x00000000000000000000000000000000000000aa \n0x123\n';
    expect(evmAddressesOf(text)).toEqual([
      '0xabc0000000000000000000000000000000000001',
      '0x00000000000000000000000000000000000000aa',
    ]);
  });

  it('unions every list case-insensitively, naming each list an address is on', () => {
    const union = unionLists({
      ETH: ['0xAA00000000000000000000000000000000000000', '0xbb00000000000000000000000000000000000000'],
      USDT: ['0xaa00000000000000000000000000000000000000', '0xcc00000000000000000000000000000000000000', 'Tsomething'],
    });
    expect([...union.entries()].sort()).toEqual([
      ['0xaa00000000000000000000000000000000000000', ['ETH', 'USDT']],
      ['0xbb00000000000000000000000000000000000000', ['ETH']],
      ['0xcc00000000000000000000000000000000000000', ['USDT']],
    ]);
  });

  it('tells what a new snapshot adds and removes', () => {
    expect(diffSnapshots(['a', 'b', 'c'], ['b', 'c', 'd', 'e'])).toEqual({ added: ['d', 'e'], removed: ['a'] });
  });
});

describe('sdn_advanced.xml', () => {
  it('collects VersionDetail texts of the digital-currency features, by asset, with the date of issue', () => {
    const extract = parseSdnAdvancedXml(fixture);
    expect(extract.publishedOn).toBe('2026-11-03');
    expect(extract.lists).toEqual({
      ETH: ['0x098B716B8Aaf21512996dC57EB0615e2383E2f96', '0x1111111111111111111111111111111111111111'],
      USDT: [
        '0x098B716B8Aaf21512996dC57EB0615e2383E2f96',
        '0x2222222222222222222222222222222222222222',
        'TXjVWnz5AfZrPZ8pZdaJy3i3nkgzkQ1Zn5',
      ],
      XBT: ['1Df883c96LVauVsx9FEgnsourD8DELwCUQ'],
    });
    // Birthdates (another feature type) are not addresses.
    expect(JSON.stringify(extract.lists)).not.toContain('1970');
    expect(unionLists(extract.lists).size).toBe(3);
  });

  it('yields nothing from a document without digital-currency features', () => {
    expect(parseSdnAdvancedXml('<Sanctions><DistinctParties/></Sanctions>')).toEqual({ lists: {}, publishedOn: null });
  });
});

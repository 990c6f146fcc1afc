import { describe, expect, it } from 'vitest';
import { colorFor, type Grade, gradeFor, gradeRange } from './agents.model.ts';

const bands: ReadonlyArray<readonly [Grade, number, number]> = [
  ['AAA', 950, 1000],
  ['AA', 900, 949],
  ['A', 850, 899],
  ['BBB', 750, 849],
  ['BB', 650, 749],
  ['B', 550, 649],
  ['CCC', 450, 549],
  ['CC', 350, 449],
  ['C', 250, 349],
  ['D', 0, 249],
];

describe('gradeFor', () => {
  for (const [grade, min, max] of bands) {
    it(`gives ${grade} at the lower end of its band (${min})`, () => {
      expect(gradeFor(min)).toBe(grade);
    });
    it(`gives ${grade} at the upper end of its band (${max})`, () => {
      expect(gradeFor(max)).toBe(grade);
    });
  }

  it('moves to the next lower grade one point below each floor', () => {
    bands.slice(0, -1).forEach(([, min], i) => {
      const lower = bands[i + 1]?.[0];
      expect(lower).toBeDefined();
      expect(gradeFor(min - 1)).toBe(lower);
    });
  });

  it('assigns exactly one band to every integer score 0..1000', () => {
    for (let score = 0; score <= 1000; score++) {
      const matches = bands.filter(([, min, max]) => score >= min && score <= max);
      expect(matches).toHaveLength(1);
      expect(gradeFor(score)).toBe(matches[0]?.[0]);
    }
  });
});

describe('gradeRange', () => {
  for (const [grade, min, max] of bands) {
    it(`gives ${min}..${max} for ${grade}`, () => {
      expect(gradeRange(grade)).toEqual({ min, max });
    });

    it(`is consistent with gradeFor for ${grade}`, () => {
      const range = gradeRange(grade);
      expect(gradeFor(range.min)).toBe(grade);
      expect(gradeFor(range.max)).toBe(grade);
      if (range.min > 0) expect(gradeFor(range.min - 1)).not.toBe(grade);
      if (range.max < 1000) expect(gradeFor(range.max + 1)).not.toBe(grade);
    });
  }

  it('ranges tile 0..1000 without gaps or overlaps', () => {
    const ranges = bands.map(([grade]) => gradeRange(grade)).sort((a, b) => a.min - b.min);
    expect(ranges).toHaveLength(10);
    expect(ranges[0]?.min).toBe(0);
    expect(ranges.at(-1)?.max).toBe(1000);
    ranges.slice(1).forEach((range, i) => {
      expect(range.min).toBe((ranges[i]?.max ?? Number.NaN) + 1);
    });
  });
});

describe('colorFor', () => {
  it.each([
    [1000, '#22C55E'],
    [700, '#22C55E'],
    [699, '#FACC15'],
    [400, '#FACC15'],
    [399, '#EF4444'],
    [0, '#EF4444'],
  ])('colors score %i as %s', (score, color) => {
    expect(colorFor(score)).toBe(color);
  });
});

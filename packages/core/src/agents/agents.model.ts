export type Grade = 'AAA' | 'AA' | 'A' | 'BBB' | 'BB' | 'B' | 'CCC' | 'CC' | 'C' | 'D';

/** Lower bound of each grade, best first (docs/api.md). */
export const gradeFloors: ReadonlyArray<readonly [Grade, number]> = [
  ['AAA', 950],
  ['AA', 900],
  ['A', 850],
  ['BBB', 750],
  ['BB', 650],
  ['B', 550],
  ['CCC', 450],
  ['CC', 350],
  ['C', 250],
  ['D', 0],
];

export function gradeFor(score: number): Grade {
  for (const [grade, floor] of gradeFloors) if (score >= floor) return grade;
  return 'D';
}

/** Inclusive score range of a grade. */
export function gradeRange(grade: Grade): { min: number; max: number } {
  const index = gradeFloors.findIndex(([g]) => g === grade);
  const min = gradeFloors[index]?.[1] ?? 0;
  const max = index === 0 ? 1000 : (gradeFloors[index - 1]?.[1] ?? 1001) - 1;
  return { min, max };
}

export function colorFor(score: number): string {
  if (score >= 700) return '#22C55E';
  if (score >= 400) return '#FACC15';
  return '#EF4444';
}

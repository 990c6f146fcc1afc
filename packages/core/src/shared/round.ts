/**
 * An integer rounded half up as the exact value `x` stands for. Binary floating point makes
 * 0.375 × 0.3 × 1000 (112.5) 112.49999999999999 and 219 ÷ 365 × 100 (60) 59.99999999999999,
 * which Math.round alone would take down; the models' products and sums err by far less than a
 * billionth, so `x` is first snapped to that grid, then rounded.
 */
export function roundHalfUp(x: number): number {
  return Math.round(Math.round(x * 1e9) / 1e9);
}

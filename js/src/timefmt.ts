// Times on the launch's axis (ns) as text, and the ticks of the time axis.

const UNITS: [number, string][] = [[1e9, "s"], [1e6, "ms"], [1e3, "µs"], [1, "ns"]];

function unitFor(ns: number): [number, string] {
  const magnitude = Math.abs(ns);
  for (const unit of UNITS) if (magnitude >= unit[0]) return unit;
  return UNITS[UNITS.length - 1];
}

/** About four significant digits in the largest unit that keeps the number ≥ 1. */
export function formatTime(ns: number): string {
  const [scale, name] = unitFor(ns);
  const value = ns / scale;
  if (scale === 1 && Number.isInteger(value)) return `${value} ns`;
  const digits = Math.max(0, 3 - Math.floor(Math.log10(Math.max(Math.abs(value), 1))));
  return `${value.toFixed(digits)} ${name}`;
}

/** Exact integer nanoseconds with thousands separators. */
export function formatExactNs(ns: number): string {
  return `${Math.round(ns).toLocaleString("en-US")} ns`;
}

export interface Ticks {
  step: number;
  values: number[];
  label: (ns: number) => string;
}

/**
 * Ticks every 1, 2 or 5 × 10^k ns, at least `minSpacing` px apart, labelled in the unit of
 * the window's far end with as many decimals as the step needs (181.4 µs, not 181400 ns).
 */
export function timeTicks(t0: number, t1: number, widthPx: number, minSpacing = 90): Ticks {
  const span = Math.max(t1 - t0, 1e-3);
  const raw = (span / Math.max(widthPx, 1)) * minSpacing;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw) ?? 10 * power;
  const values: number[] = [];
  for (let k = Math.ceil(t0 / step); k * step <= t1; k++) values.push(k * step);
  const [scale, name] = unitFor(Math.max(Math.abs(t0), Math.abs(t1)));
  const digits = Math.max(0, -Math.floor(Math.log10(step / scale) + 1e-9));
  return { step, values, label: (ns) => `${(ns / scale).toFixed(digits)} ${name}` };
}

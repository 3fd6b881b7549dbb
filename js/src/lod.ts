// Level of detail: at a zoom where one pixel spans many slices, a track draws only the
// longest slice of each power-of-two time bucket (the Perfetto rule), so a frame costs
// about one slice per pixel per visible track however many instances a lane holds.

import type { NumericArray } from "./payload";

/** Tracks this short are cheaper to draw whole than to build levels for. */
const SHORT_TRACK = 1024;

/** Slices of one warp at one depth (sub-row): instance rows sorted by start, never overlapping. */
export class Track {
  readonly rows: Int32Array;
  private readonly start: NumericArray;
  private readonly duration: NumericArray;
  private readonly levels = new Map<number, Int32Array>();

  constructor(rows: Int32Array, start: NumericArray, duration: NumericArray) {
    this.rows = rows;
    this.start = start;
    this.duration = duration;
  }

  /** The longest slice per bucket of 2^level ns, in start order; level <= 0 keeps every slice. */
  level(level: number): Int32Array {
    if (level <= 0 || this.rows.length <= SHORT_TRACK) return this.rows;
    const cached = this.levels.get(level);
    if (cached) return cached;
    // Derive from the finest coarser-than-raw level already built: merging buckets is exact.
    let source = this.rows;
    let sourceLevel = 0;
    for (const [l, rows] of this.levels) {
      if (l < level && l > sourceLevel) { source = rows; sourceLevel = l; }
    }
    const kept = keepLongestPerBucket(source, this.start, this.duration, 2 ** level);
    // A level that drops nothing shares its array with the finer one.
    const result = kept.length === source.length ? source : kept;
    this.levels.set(level, result);
    return result;
  }
}

function keepLongestPerBucket(rows: Int32Array, start: NumericArray, duration: NumericArray, size: number): Int32Array {
  const out = new Int32Array(rows.length);
  let n = 0;
  let bucket = -Infinity;
  for (let k = 0; k < rows.length; k++) {
    const row = rows[k];
    const b = Math.floor(start[row] / size);
    if (b !== bucket) {
      out[n++] = row;
      bucket = b;
    } else if (duration[row] > duration[out[n - 1]]) {
      out[n - 1] = row;
    }
  }
  return out.slice(0, n);
}

/** First position in `rows` whose slice starts at or after t. */
export function firstStartingAt(rows: Int32Array, start: NumericArray, t: number): number {
  let lo = 0;
  let hi = rows.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (start[rows[mid]] < t) lo = mid + 1; else hi = mid;
  }
  return lo;
}

let scratchRow = new Int32Array(0);
let scratchDuration = new Float64Array(0);

/**
 * The slices one row draws between t0 and t1 at `level`: from one track its level array
 * (a view, no copy); from several (a collapsed group) the slice of each bucket that shows
 * the most of itself between t0 and t1. Includes the slice just before t0 of each track,
 * which may reach in: all of those share the first bucket, so a long slice that ended
 * before t0 must not win it over a shorter one still running.
 */
export function collectSlices(tracks: Track[], level: number, t0: number, t1: number,
                              start: NumericArray, duration: NumericArray): Int32Array {
  if (tracks.length === 1) {
    const rows = tracks[0].level(level);
    return rows.subarray(Math.max(0, firstStartingAt(rows, start, t0) - 1), firstStartingAt(rows, start, t1));
  }
  const size = 2 ** level;
  const base = Math.floor(t0 / size);
  const buckets = Math.floor(t1 / size) - base + 1;
  if (scratchRow.length < buckets) {
    scratchRow = new Int32Array(buckets);
    scratchDuration = new Float64Array(buckets);
  }
  scratchRow.fill(-1, 0, buckets);
  for (const track of tracks) {
    const rows = track.level(level);
    const end = firstStartingAt(rows, start, t1);
    for (let k = Math.max(0, firstStartingAt(rows, start, t0) - 1); k < end; k++) {
      const row = rows[k];
      const shown = Math.min(start[row] + duration[row], t1) - Math.max(start[row], t0);
      if (shown < 0) continue; // ended before the window
      const b = Math.max(0, Math.floor(start[row] / size) - base);
      if (scratchRow[b] < 0 || shown > scratchDuration[b]) {
        scratchRow[b] = row;
        scratchDuration[b] = shown;
      }
    }
  }
  let n = 0;
  for (let b = 0; b < buckets; b++) if (scratchRow[b] >= 0) n++;
  const out = new Int32Array(n);
  n = 0;
  for (let b = 0; b < buckets; b++) if (scratchRow[b] >= 0) out[n++] = scratchRow[b];
  return out;
}

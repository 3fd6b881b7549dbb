// The timeline's search: a query names scopes and places, and matches scope instances.
//
// Syntax (case-insensitive; terms combine with "and"):
//   softmax            scopes whose name contains "softmax"
//   block 3            block (3, 0, 0); `block 3,1` or `block (3, 1, 0)` name y and z too
//   warp 5             warp 5 of its block
//   sm 12              SM 12
// e.g. `softmax sm 12` is every softmax instance on SM 12.

import type { TimelineData } from "./payload";

export interface Query {
  /** Scope indices whose name matches; null when the query names no scope. */
  scopes: Set<number> | null;
  block: number[] | null;
  warp: number | null;
  sm: number | null;
}

const PLACE = /\b(block|warp|sm)\b\s*(\(?\s*\d+(?:\s*,\s*\d+){0,2}\s*\)?)?/gi;

/** The query, or a one-line reason it cannot be read. */
export function parseQuery(text: string, scopeNames: string[]): Query | string {
  const query: Query = { scopes: null, block: null, warp: null, sm: null };
  let error = "";
  const rest = text.replace(PLACE, (_, word: string, value: string | undefined) => {
    const key = word.toLowerCase() as "block" | "warp" | "sm";
    const numbers = (value ?? "").match(/\d+/g)?.map(Number) ?? [];
    if (!numbers.length) error ||= `${key} needs a number, e.g. "${key} 3"`;
    else if (key !== "block" && numbers.length > 1) error ||= `${key} takes one number, not ${numbers.length}`;
    else if (key === "block") query.block = [numbers[0], numbers[1] ?? 0, numbers[2] ?? 0];
    else query[key] = numbers[0];
    return " ";
  }).trim().toLowerCase();
  if (error) return error;
  if (rest) {
    query.scopes = new Set();
    scopeNames.forEach((name, index) => { if (name.toLowerCase().includes(rest)) query.scopes!.add(index); });
  }
  return query;
}

/**
 * The instances of these warps (rows of the warp table) that the query matches and whose
 * scope is not hidden: a flag per instance, and the matches in start order.
 */
export function findMatches(data: TimelineData, warpRows: Iterable<number>, query: Query,
                            hiddenScopes: Uint8Array): { flags: Uint8Array; ordered: Int32Array } {
  const w = data.warps;
  const { scope, startNs } = data.instances;
  const flags = new Uint8Array(data.instances.count);
  const found: number[] = [];
  for (const r of warpRows) {
    if (query.sm !== null && w.sm[r] !== query.sm) continue;
    if (query.warp !== null && w.warp[r] !== query.warp) continue;
    const b = query.block;
    if (b && (w.blockX[r] !== b[0] || w.blockY[r] !== b[1] || w.blockZ[r] !== b[2])) continue;
    for (let i = w.first[r]; i < w.first[r + 1]; i++) {
      if (hiddenScopes[scope[i]] || (query.scopes && !query.scopes.has(scope[i]))) continue;
      flags[i] = 1;
      found.push(i);
    }
  }
  const ordered = Int32Array.from(found).sort((a, b) => startNs[a] - startNs[b] || a - b);
  return { flags, ordered };
}

// The rows of one launch: SM → block → warp, groups collapsible. A collapsed group is
// drawn as one summary row of all its warps' slices.

import { Track } from "./lod";
import type { TimelineData } from "./payload";

export type NodeKind = "sm" | "block" | "warp";

export class LaneNode {
  readonly kind: NodeKind;
  readonly label: string;
  readonly indent: number;
  readonly children: LaneNode[] = [];
  /** Rows of the warp table under this node. */
  readonly warpRows: number[] = [];
  collapsed = false;
  depthCount = 1;
  parent: LaneNode | null = null;
  /** The earliest entry and latest exit of its warps (ns); a warp that never exited adds its entry only. */
  lifeStartNs = Infinity;
  lifeEndNs = -Infinity;
  private tracks: Track[][] | null = null;
  private readonly ownTracks: Track[] | null;

  constructor(kind: NodeKind, label: string, indent: number, ownTracks: Track[] | null = null) {
    this.kind = kind;
    this.label = label;
    this.indent = indent;
    this.ownTracks = ownTracks;
    if (ownTracks) this.depthCount = Math.max(1, ownTracks.length);
  }

  get isGroup(): boolean {
    return this.kind !== "warp";
  }

  /** Per depth (sub-row), the tracks this row draws (one for a warp; all its warps' for a group). */
  depthTracks(): Track[][] {
    if (this.tracks) return this.tracks;
    if (this.ownTracks) {
      this.tracks = this.ownTracks.map((t) => [t]);
    } else {
      const perDepth: Track[][] = Array.from({ length: this.depthCount }, () => []);
      for (const leaf of this.leaves()) {
        leaf.depthTracks().forEach((tracks, depth) => perDepth[depth].push(...tracks));
      }
      this.tracks = perDepth;
    }
    return this.tracks;
  }

  private *leaves(): Generator<LaneNode> {
    if (!this.isGroup) { yield this; return; }
    for (const child of this.children) yield* child.leaves();
  }
}

/** A row on screen: a group header (expanded), a group summary (collapsed) or a warp. */
export interface Row {
  node: LaneNode;
  top: number;
  height: number;
  drawsSlices: boolean;
}

export const TRACK_HEIGHT = 14;
export const ROW_PADDING = 1;
export const HEADER_HEIGHT = 18;
/** Launches with more warps than this open with their SMs collapsed. */
const EXPANDED_WARP_LIMIT = 48;

let identity = new Int32Array(0);

function identityRows(count: number): Int32Array {
  if (identity.length < count) {
    identity = new Int32Array(count);
    for (let i = 0; i < count; i++) identity[i] = i;
  }
  return identity;
}

/** One track per depth of the warp's instance rows a..b: the decoder gives instances that overlap
 * without nesting depths of their own (records.lanes), so a track's slices never overlap. */
function warpTracks(data: TimelineData, a: number, b: number): Track[] {
  const { startNs, durationNs, depth } = data.instances;
  let maxDepth = 0;
  for (let r = a; r < b; r++) if (depth[r] > maxDepth) maxDepth = depth[r];
  let perDepth: Int32Array[];
  if (maxDepth === 0) {
    perDepth = [identityRows(data.instances.count).subarray(a, b)];
  } else {
    const counts = new Int32Array(maxDepth + 1);
    for (let r = a; r < b; r++) counts[depth[r]]++;
    perDepth = Array.from(counts, (c) => new Int32Array(c));
    counts.fill(0);
    for (let r = a; r < b; r++) perDepth[depth[r]][counts[depth[r]]++] = r;
  }
  return perDepth.map((rows) => new Track(sortedByStart(rows, startNs), startNs, durationNs));
}

/** Rows come in program order, which is start order; clock anomalies get sorted here. */
function sortedByStart(rows: Int32Array, start: ArrayLike<number>): Int32Array {
  for (let k = 1; k < rows.length; k++) {
    if (start[rows[k]] < start[rows[k - 1]]) {
      return Int32Array.from(Array.from(rows).sort((x, y) => start[x] - start[y] || x - y));
    }
  }
  return rows;
}

function blockLabel(x: number, y: number, z: number, grid: number[]): string {
  return grid[1] === 1 && grid[2] === 1 ? `block ${x}` : `block (${x}, ${y}, ${z})`;
}

export interface Lanes {
  roots: LaneNode[];
  /** The warp node of each row of the warp table in this launch. */
  leafOfWarp: Map<number, LaneNode>;
}

/** The SM nodes of one launch, sorted by SM, block and warp. */
export function buildLanes(data: TimelineData, launch: number): Lanes {
  const w = data.warps;
  const grid = data.launches[launch].grid;
  const rows: number[] = [];
  for (let r = 0; r < w.count; r++) if (w.launch[r] === launch) rows.push(r);
  rows.sort((a, b) => w.sm[a] - w.sm[b] || w.blockZ[a] - w.blockZ[b] || w.blockY[a] - w.blockY[b]
    || w.blockX[a] - w.blockX[b] || w.warp[a] - w.warp[b]);

  const sms: LaneNode[] = [];
  const leafOfWarp = new Map<number, LaneNode>();
  let sm: LaneNode | null = null;
  let block: LaneNode | null = null;
  let blockKey = "";
  for (const r of rows) {
    if (!sm || w.sm[r] !== w.sm[sm.warpRows[0]]) {
      sm = new LaneNode("sm", `SM ${w.sm[r]}`, 0);
      sms.push(sm);
      block = null;
    }
    const key = `${w.blockX[r]},${w.blockY[r]},${w.blockZ[r]}`;
    if (!block || key !== blockKey) {
      block = new LaneNode("block", blockLabel(w.blockX[r], w.blockY[r], w.blockZ[r], grid), 1);
      block.parent = sm;
      sm.children.push(block);
      blockKey = key;
    }
    const warp = new LaneNode("warp", `warp ${w.warp[r]}`, 2, warpTracks(data, w.first[r], w.first[r + 1]));
    warp.parent = block;
    block.children.push(warp);
    leafOfWarp.set(r, warp);
    const life = w.endNs[r] < 0 ? w.startNs[r] : w.endNs[r];
    for (const node of [warp, block, sm]) {
      node.warpRows.push(r);
      node.depthCount = Math.max(node.depthCount, warp.depthCount);
      node.lifeStartNs = Math.min(node.lifeStartNs, w.startNs[r]);
      node.lifeEndNs = Math.max(node.lifeEndNs, life);
    }
  }
  if (rows.length > EXPANDED_WARP_LIMIT) for (const node of sms) node.collapsed = true;
  return { roots: sms, leafOfWarp };
}

/** The node whose row shows this warp now: the warp, or its outermost collapsed group. */
export function shownNode(leaf: LaneNode): LaneNode {
  let shown = leaf;
  for (let node = leaf.parent; node; node = node.parent) if (node.collapsed) shown = node;
  return shown;
}

/** The rows on screen, top to bottom, for the current collapse state. */
export function layoutRows(roots: LaneNode[]): { rows: Row[]; rowOf: Map<LaneNode, Row>; height: number } {
  const rows: Row[] = [];
  const rowOf = new Map<LaneNode, Row>();
  let top = 0;
  const visit = (node: LaneNode) => {
    if (node.isGroup && !node.collapsed) {
      const header = { node, top, height: HEADER_HEIGHT, drawsSlices: false };
      rows.push(header);
      rowOf.set(node, header);
      top += HEADER_HEIGHT;
      node.children.forEach(visit);
      return;
    }
    const height = node.depthCount * TRACK_HEIGHT + 2 * ROW_PADDING;
    const row = { node, top, height, drawsSlices: true };
    rows.push(row);
    rowOf.set(node, row);
    top += height;
  };
  roots.forEach(visit);
  return { rows, rowOf, height: top };
}

/** The row under content height y (rows are sorted by top). */
export function rowAt(rows: Row[], y: number): Row | null {
  let lo = 0;
  let hi = rows.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const row = rows[mid];
    if (y < row.top) hi = mid - 1;
    else if (y >= row.top + row.height) lo = mid + 1;
    else return row;
  }
  return null;
}

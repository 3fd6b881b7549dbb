// Draws one frame: axis, row labels, warp lifetimes, slices and highlights. Slices are
// batched per colour into one path each (canvas state changes dominate the cost), and
// only slices in the visible window are touched (see lod.ts).

import { ROW_PADDING, TRACK_HEIGHT, type LaneNode, type Row } from "./lanes";
import { collectSlices } from "./lod";
import type { NumericArray, TimelineData } from "./payload";
import { formatTime, timeTicks } from "./timefmt";
import type { Viewport } from "./viewport";

export const GUTTER_WIDTH = 180;
export const AXIS_HEIGHT = 24;
/** Slices narrower than this get no label. */
export const MIN_LABEL_PX = 5;
const MIN_SLICE_PX = 1;
/** A shortened label shows at least this many characters, or none. */
const MIN_LABEL_CHARS = 3;
/** Group labels sit in the first line of a row however tall the row is. */
const HEADER_TEXT_LINE = 18;
const LABEL_FONT = "10px system-ui, -apple-system, 'Segoe UI', sans-serif";
const GUTTER_FONT = "11px system-ui, -apple-system, 'Segoe UI', sans-serif";

export interface Theme {
  background: string;
  foreground: string;
  muted: string;
  grid: string;
  lifetime: string;
  header: string;
  highlight: string;
}

export interface Frame {
  rows: Row[];
  scrollTop: number;
  widthPx: number;
  heightPx: number;
  dpr: number;
  view: Viewport;
  theme: Theme;
  hovered: number;  // instance row, -1 for none
  selected: number; // instance row, -1 for none
  /** Where an instance is drawn now: its row on screen and depth, or null when hidden. */
  placeOf: (instance: number) => { row: Row; depth: number } | null;
  /** Per scope, 1 where the legend turned it off: its slices are not drawn. */
  hiddenScopes?: Uint8Array;
  /** Per instance, 1 where it matches the search; the others are drawn faded. Null: no search. */
  matches?: Uint8Array | null;
  /** The ruler's two ends (ns), or null. */
  ruler?: { fromNs: number; toNs: number } | null;
}

/** Slices that do not match the search are drawn at this opacity. */
const FADED_ALPHA = 0.22;
const RULER_ALPHA = 0.14;
/** Axis labels keep this many pixels from one another, the canvas's edge and the ruler's label. */
const LABEL_GAP = 4;
/** Tick marks: this tall, at the axis's bottom; the ruler's label stays above them. */
const TICK_HEIGHT = 6;

interface CachedSlices {
  level: number;
  t0: number;
  t1: number;
  rows: Int32Array;
}

/** Perceived lightness of a #rrggbb colour decides dark or light label text. */
function labelColorFor(hex: string): string {
  const v = parseInt(hex.slice(1), 16);
  const luminance = 0.299 * ((v >> 16) & 255) + 0.587 * ((v >> 8) & 255) + 0.114 * (v & 255);
  return luminance > 150 ? "#111" : "#fff";
}

/** In a group's summary row slices of different warps overlap; a label there would sit on another slice. */
function overlapsNeighbour(rows: Int32Array, k: number, start: NumericArray, duration: NumericArray): boolean {
  const r = rows[k];
  if (k > 0 && start[rows[k - 1]] + duration[rows[k - 1]] > start[r]) return true;
  return k + 1 < rows.length && start[rows[k + 1]] < start[r] + duration[r];
}

export class Painter {
  private readonly data: TimelineData;
  private readonly labelColors: string[];
  private readonly labelWidths: number[] = [];
  private cache = new WeakMap<LaneNode, CachedSlices[]>();
  private rects: Float32Array[];
  private rectCounts: Int32Array;
  /** (instance row, x, y, width) of each slice wide enough for a label. */
  private labels = new Float32Array(4096);
  private labelCount = 0;

  constructor(data: TimelineData) {
    this.data = data;
    this.labelColors = data.scopeColors.map(labelColorFor);
    // One batch per scope, then one per scope faded (slices a search does not match).
    this.rects = [...data.scopeColors, ...data.scopeColors].map(() => new Float32Array(1024));
    this.rectCounts = new Int32Array(2 * data.scopeColors.length);
  }

  /** The instance rows a row draws at one depth now, recomputed only when the window leaves the cached slack. */
  slicesOf(node: LaneNode, depth: number, view: Viewport): Int32Array {
    const level = view.lodLevel;
    let perDepth = this.cache.get(node);
    if (!perDepth) {
      perDepth = [];
      this.cache.set(node, perDepth);
    }
    const hit = perDepth[depth];
    if (hit && hit.level === level && hit.t0 <= view.startNs && view.endNs <= hit.t1) return hit.rows;
    const span = view.endNs - view.startNs;
    const t0 = view.startNs - span / 2;
    const t1 = view.endNs + span / 2;
    const { startNs, durationNs } = this.data.instances;
    const rows = collectSlices(node.depthTracks()[depth] ?? [], level, t0, t1, startNs, durationNs);
    perDepth[depth] = { level, t0, t1, rows };
    return rows;
  }

  draw(ctx: CanvasRenderingContext2D, frame: Frame): void {
    const { widthPx, heightPx, theme } = frame;
    ctx.setTransform(frame.dpr, 0, 0, frame.dpr, 0, 0);
    ctx.fillStyle = theme.background;
    ctx.fillRect(0, 0, widthPx, heightPx);
    const visible = frame.rows.filter((row) => {
      const y = AXIS_HEIGHT + row.top - frame.scrollTop;
      return y + row.height > AXIS_HEIGHT && y < heightPx;
    });
    this.drawGrid(ctx, frame);
    ctx.save();
    ctx.beginPath();
    ctx.rect(GUTTER_WIDTH, AXIS_HEIGHT, widthPx - GUTTER_WIDTH, heightPx - AXIS_HEIGHT);
    ctx.clip();
    this.drawRowBackgrounds(ctx, frame, visible);
    this.drawSlices(ctx, frame, visible);
    this.drawHighlight(ctx, frame, frame.hovered, 1, theme.foreground);
    this.drawHighlight(ctx, frame, frame.selected, 2, theme.highlight);
    ctx.restore();
    this.drawGutter(ctx, frame, visible);
    const rulerLabel = this.rulerLabel(ctx, frame);
    this.drawAxis(ctx, frame, rulerLabel);
    this.drawRuler(ctx, frame, rulerLabel);
  }

  private x(view: Viewport, ns: number): number {
    return GUTTER_WIDTH + view.xOf(ns);
  }

  private rowY(frame: Frame, row: Row): number {
    return AXIS_HEIGHT + row.top - frame.scrollTop;
  }

  private drawGrid(ctx: CanvasRenderingContext2D, frame: Frame): void {
    const { view, widthPx, heightPx } = frame;
    const ticks = timeTicks(view.startNs, view.endNs, widthPx - GUTTER_WIDTH);
    ctx.fillStyle = frame.theme.grid;
    for (const t of ticks.values) ctx.fillRect(Math.round(this.x(view, t)), AXIS_HEIGHT, 1, heightPx - AXIS_HEIGHT);
  }

  private drawRowBackgrounds(ctx: CanvasRenderingContext2D, frame: Frame, visible: Row[]): void {
    const { view, theme, widthPx } = frame;
    for (const row of visible) {
      const y = this.rowY(frame, row);
      if (!row.drawsSlices) {
        ctx.fillStyle = theme.header;
        ctx.fillRect(GUTTER_WIDTH, y, widthPx - GUTTER_WIDTH, row.height);
        continue;
      }
      const node = row.node;
      if (node.lifeEndNs > node.lifeStartNs) {
        // The warps' lifetime: what is not covered by a slice inside it is time outside any scope.
        ctx.fillStyle = theme.lifetime;
        const x0 = this.x(view, node.lifeStartNs);
        ctx.fillRect(x0, y + ROW_PADDING, this.x(view, node.lifeEndNs) - x0, row.height - 2 * ROW_PADDING);
      }
    }
  }

  private pushRect(scope: number, x: number, y: number, w: number, h: number): void {
    let buffer = this.rects[scope];
    const n = this.rectCounts[scope];
    if (n + 4 > buffer.length) {
      const grown = new Float32Array(buffer.length * 2);
      grown.set(buffer);
      this.rects[scope] = buffer = grown;
    }
    buffer[n] = x; buffer[n + 1] = y; buffer[n + 2] = w; buffer[n + 3] = h;
    this.rectCounts[scope] = n + 4;
  }

  private pushLabel(row: number, x: number, y: number, w: number): void {
    if (this.labels.length < this.labelCount + 4) {
      const grown = new Float32Array(this.labels.length * 2);
      grown.set(this.labels);
      this.labels = grown;
    }
    const l = this.labels;
    const n = this.labelCount;
    l[n] = row; l[n + 1] = x; l[n + 2] = y; l[n + 3] = w;
    this.labelCount = n + 4;
  }

  private drawSlices(ctx: CanvasRenderingContext2D, frame: Frame, visible: Row[]): void {
    const { view, widthPx } = frame;
    const { startNs, durationNs, scope } = this.data.instances;
    const hidden = frame.hiddenScopes;
    const matches = frame.matches;
    const scopes = this.data.scopeColors.length;
    this.rectCounts.fill(0);
    this.labelCount = 0;
    const left = GUTTER_WIDTH;
    for (const row of visible) {
      if (!row.drawsSlices) continue;
      const y0 = this.rowY(frame, row) + ROW_PADDING;
      for (let depth = 0; depth < row.node.depthCount; depth++) {
        const y = y0 + depth * TRACK_HEIGHT;
        const rows = this.slicesOf(row.node, depth, view);
        // Touching slices of one batch become one rectangle: zoomed out, most of them touch.
        let runBatch = -1;
        let runX0 = 0;
        let runX1 = 0;
        for (let k = 0; k < rows.length; k++) {
          const r = rows[k];
          if (hidden && hidden[scope[r]]) continue;
          let x0 = left + (startNs[r] - view.startNs) / view.nsPerPx;
          let x1 = x0 + durationNs[r] / view.nsPerPx;
          if (x1 < left || x0 > widthPx) continue;
          x0 = Math.max(x0, left - 1);
          x1 = Math.max(Math.min(x1, widthPx + 1), x0 + MIN_SLICE_PX);
          const faded = matches != null && !matches[r];
          if (!faded && x1 - x0 >= MIN_LABEL_PX && !overlapsNeighbour(rows, k, startNs, durationNs)) {
            this.pushLabel(r, x0, y, x1 - x0);
          }
          const batch = faded ? scope[r] + scopes : scope[r];
          if (batch === runBatch && x0 <= runX1 + 0.5) {
            runX1 = Math.max(runX1, x1);
            continue;
          }
          if (runBatch >= 0) this.pushRect(runBatch, runX0, y, runX1 - runX0, TRACK_HEIGHT - 1);
          runBatch = batch;
          runX0 = x0;
          runX1 = x1;
        }
        if (runBatch >= 0) this.pushRect(runBatch, runX0, y, runX1 - runX0, TRACK_HEIGHT - 1);
      }
    }
    for (let b = 0; b < this.rects.length; b++) {
      const n = this.rectCounts[b];
      if (n === 0) continue;
      const buffer = this.rects[b];
      ctx.globalAlpha = b < scopes ? 1 : FADED_ALPHA;
      ctx.fillStyle = this.data.scopeColors[b % scopes];
      ctx.beginPath();
      for (let k = 0; k < n; k += 4) ctx.rect(buffer[k], buffer[k + 1], buffer[k + 2], buffer[k + 3]);
      ctx.fill();
    }
    ctx.globalAlpha = 1;
    this.drawLabels(ctx);
  }

  private drawLabels(ctx: CanvasRenderingContext2D): void {
    const { scope } = this.data.instances;
    const names = this.data.scopeNames;
    ctx.font = LABEL_FONT;
    ctx.textBaseline = "middle";
    const charWidth = ctx.measureText("m").width;
    for (let k = 0; k < this.labelCount; k += 4) {
      const s = scope[this.labels[k]];
      const x = Math.max(this.labels[k + 1], GUTTER_WIDTH) + 2;
      const y = this.labels[k + 2];
      const room = this.labels[k + 1] + this.labels[k + 3] - x - 2;
      const name = names[s];
      const full = (this.labelWidths[s] ??= ctx.measureText(name).width);
      const chars = Math.floor(room / charWidth) - 1;
      if (full > room && chars < MIN_LABEL_CHARS) continue;
      const text = full <= room ? name : name.slice(0, chars) + "…";
      ctx.fillStyle = this.labelColors[s];
      ctx.fillText(text, x, y + TRACK_HEIGHT / 2, room);
    }
  }

  private drawHighlight(ctx: CanvasRenderingContext2D, frame: Frame, instance: number, width: number,
                        color: string): void {
    if (instance < 0) return;
    const place = frame.placeOf(instance);
    if (!place) return;
    const { startNs, durationNs } = this.data.instances;
    const x0 = this.x(frame.view, startNs[instance]);
    const w = Math.max(durationNs[instance] / frame.view.nsPerPx, MIN_SLICE_PX);
    const y = this.rowY(frame, place.row) + ROW_PADDING + place.depth * TRACK_HEIGHT;
    ctx.strokeStyle = color;
    ctx.lineWidth = width;
    ctx.strokeRect(x0 - width / 2, y - width / 2, w + width, TRACK_HEIGHT - 1 + width);
  }

  /** The ruler's duration as text and where its label sits in the axis; null without a ruler. */
  private rulerLabel(ctx: CanvasRenderingContext2D, frame: Frame): { text: string; left: number; right: number } | null {
    const ruler = frame.ruler;
    if (!ruler) return null;
    const { view, widthPx } = frame;
    const x0 = Math.max(GUTTER_WIDTH, this.x(view, Math.min(ruler.fromNs, ruler.toNs)));
    const x1 = Math.min(widthPx, this.x(view, Math.max(ruler.fromNs, ruler.toNs)));
    if (x1 < x0) return null;
    const text = formatTime(Math.abs(ruler.toNs - ruler.fromNs));
    ctx.font = GUTTER_FONT;
    // Whole pixels: the box's edges stay crisp.
    const w = Math.ceil(ctx.measureText(text).width) + 8;
    const left = Math.round(Math.min(Math.max((x0 + x1 - w) / 2, GUTTER_WIDTH), widthPx - w));
    return { text, left, right: left + w };
  }

  /** The ruler: a band between its two ends over the rows, its duration in the axis above it
   *  (above the tick marks; drawAxis leaves out the tick labels it would cover). */
  private drawRuler(ctx: CanvasRenderingContext2D, frame: Frame, label: { text: string; left: number; right: number } | null): void {
    const ruler = frame.ruler;
    if (!ruler || !label) return;
    const { view, theme, widthPx, heightPx } = frame;
    const x0 = Math.max(GUTTER_WIDTH, this.x(view, Math.min(ruler.fromNs, ruler.toNs)));
    const x1 = Math.min(widthPx, this.x(view, Math.max(ruler.fromNs, ruler.toNs)));
    ctx.fillStyle = theme.highlight;
    ctx.globalAlpha = RULER_ALPHA;
    ctx.fillRect(x0, AXIS_HEIGHT, x1 - x0, heightPx - AXIS_HEIGHT);
    ctx.globalAlpha = 1;
    ctx.fillRect(x0, AXIS_HEIGHT, 1, heightPx - AXIS_HEIGHT);
    ctx.fillRect(x1 - 1, AXIS_HEIGHT, 1, heightPx - AXIS_HEIGHT);
    ctx.font = GUTTER_FONT;
    ctx.textBaseline = "middle";
    const top = 2;
    const bottom = AXIS_HEIGHT - TICK_HEIGHT - 1;
    ctx.fillRect(label.left, top, label.right - label.left, bottom - top);
    ctx.fillStyle = theme.background;
    ctx.fillText(label.text, label.left + 4, (top + bottom) / 2);
  }

  private drawGutter(ctx: CanvasRenderingContext2D, frame: Frame, visible: Row[]): void {
    const { theme, widthPx } = frame;
    ctx.fillStyle = theme.background;
    ctx.fillRect(0, AXIS_HEIGHT, GUTTER_WIDTH, frame.heightPx - AXIS_HEIGHT);
    ctx.font = GUTTER_FONT;
    ctx.textBaseline = "middle";
    for (const row of visible) {
      const y = this.rowY(frame, row);
      const node = row.node;
      if (node.isGroup) {
        ctx.fillStyle = theme.header;
        ctx.fillRect(0, y, GUTTER_WIDTH, row.height);
      }
      if (node.kind === "sm") {
        ctx.fillStyle = theme.grid;
        ctx.fillRect(0, y, widthPx, 1);
      }
      const x = 6 + node.indent * 12;
      const label = node.isGroup ? `${node.collapsed ? "▸" : "▾"} ${node.label}` : node.label;
      const count = node.isGroup ? ` · ${node.warpRows.length} warp${node.warpRows.length === 1 ? "" : "s"}` : "";
      ctx.fillStyle = node.isGroup ? theme.foreground : theme.muted;
      ctx.fillText(label + count, x, y + Math.min(row.height, HEADER_TEXT_LINE) / 2 + 1, GUTTER_WIDTH - x - 4);
    }
    ctx.fillStyle = theme.grid;
    ctx.fillRect(GUTTER_WIDTH - 1, AXIS_HEIGHT, 1, frame.heightPx - AXIS_HEIGHT);
  }

  /** Ticks and their labels; a label sits right of its tick, or left of it where it would
   *  run past the canvas's edge, and is left out where it would touch another label, the
   *  row labels' gutter or the ruler's label (`avoid`). */
  private drawAxis(ctx: CanvasRenderingContext2D, frame: Frame, avoid: { left: number; right: number } | null): void {
    const { view, theme, widthPx } = frame;
    ctx.fillStyle = theme.background;
    ctx.fillRect(0, 0, widthPx, AXIS_HEIGHT);
    ctx.fillStyle = theme.grid;
    ctx.fillRect(0, AXIS_HEIGHT - 1, widthPx, 1);
    const ticks = timeTicks(view.startNs, view.endNs, widthPx - GUTTER_WIDTH);
    ctx.font = GUTTER_FONT;
    ctx.textBaseline = "middle";
    ctx.save();
    ctx.beginPath();
    ctx.rect(GUTTER_WIDTH, 0, widthPx - GUTTER_WIDTH, AXIS_HEIGHT);
    ctx.clip();
    let lastRight = -Infinity;
    for (const t of ticks.values) {
      const x = Math.round(this.x(view, t));
      ctx.fillStyle = theme.muted;
      ctx.fillRect(x, AXIS_HEIGHT - TICK_HEIGHT, 1, TICK_HEIGHT);
      const text = ticks.label(t);
      const width = ctx.measureText(text).width;
      let left = x + 3;
      if (left + width > widthPx - LABEL_GAP) left = x - 3 - width;
      const right = left + width;
      if (left < GUTTER_WIDTH + LABEL_GAP || left < lastRight + LABEL_GAP) continue;
      if (avoid && left < avoid.right + LABEL_GAP && right > avoid.left - LABEL_GAP) continue;
      ctx.fillStyle = theme.foreground;
      ctx.fillText(text, left, AXIS_HEIGHT / 2 - 2);
      lastRight = right;
    }
    ctx.restore();
  }
}

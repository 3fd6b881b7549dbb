// The visible time window: which ns is at the left edge and how many ns one pixel spans.

/** Zooming in stops at 1 ns spanning this many pixels. */
const MAX_PX_PER_NS = 400;
/** The window may extend this share of the launch beyond either end. */
const MARGIN = 0.05;
/** A span centred on takes at most this share of the width. */
const FIT_SHARE = 0.8;
/** A window centred on a span is at most this many times as wide as the span. */
const CONTEXT = 20;

export class Viewport {
  startNs = 0;
  nsPerPx = 1;
  widthPx = 1;
  private durationNs = 1;

  /** Show the whole launch. */
  reset(durationNs: number, widthPx: number): void {
    this.durationNs = Math.max(durationNs, 1);
    this.widthPx = Math.max(widthPx, 1);
    this.nsPerPx = (this.durationNs * (1 + 2 * MARGIN)) / this.widthPx;
    this.startNs = -this.durationNs * MARGIN;
  }

  /** Keep the left edge and the scale when the drawing area changes width. */
  resize(widthPx: number): void {
    this.widthPx = Math.max(widthPx, 1);
    this.clamp();
  }

  get endNs(): number {
    return this.startNs + this.nsPerPx * this.widthPx;
  }

  timeAt(x: number): number {
    return this.startNs + x * this.nsPerPx;
  }

  xOf(ns: number): number {
    return (ns - this.startNs) / this.nsPerPx;
  }

  /** Zoom by `factor` (> 1 zooms out) keeping the time under pixel x where it is. */
  zoomAt(x: number, factor: number): void {
    const anchor = this.timeAt(x);
    this.nsPerPx *= factor;
    this.clamp();
    this.startNs = anchor - x * this.nsPerPx;
    this.clamp();
  }

  /**
   * Put `ns` at the centre, keeping the scale unless a span of `spanNs` there would not fit
   * (zoom out) or would be lost in the window (zoom in to CONTEXT times the span).
   */
  centreOn(ns: number, spanNs: number): void {
    const span = Math.max(spanNs, 1);
    this.nsPerPx = Math.min(Math.max(this.nsPerPx, span / (FIT_SHARE * this.widthPx)), (CONTEXT * span) / this.widthPx);
    this.clamp();
    this.startNs = ns - (this.widthPx / 2) * this.nsPerPx;
    this.clamp();
  }

  panBy(dxPx: number): void {
    this.startNs -= dxPx * this.nsPerPx;
    this.clamp();
  }

  /** The level-of-detail level: buckets of 2^level ns are at most one pixel wide. */
  get lodLevel(): number {
    return Math.floor(Math.log2(this.nsPerPx));
  }

  private clamp(): void {
    const widest = (this.durationNs * (1 + 2 * MARGIN)) / this.widthPx;
    this.nsPerPx = Math.min(Math.max(this.nsPerPx, 1 / MAX_PX_PER_NS), widest);
    const lo = -this.durationNs * MARGIN;
    const hi = this.durationNs * (1 + MARGIN) - this.nsPerPx * this.widthPx;
    this.startNs = Math.min(Math.max(this.startNs, lo), Math.max(hi, lo));
  }
}

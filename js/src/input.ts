// Pointer input the timelines share (timeline.ts, compare.ts): where the pointer is on a
// canvas, the wheel's zoom and pan, and a press that becomes a drag panning the view.

import { GUTTER_WIDTH } from "./painter";
import type { Viewport } from "./viewport";

/** Pointer travel (px) below which a press counts as a click, not a drag. */
export const DRAG_SLOP = 3;

/** The pointer's position in CSS pixels from the canvas's top-left corner. */
export function pointAt(canvas: HTMLCanvasElement, event: MouseEvent): { x: number; y: number } {
  const box = canvas.getBoundingClientRect();
  return { x: event.clientX - box.left, y: event.clientY - box.top };
}

/** One wheel event on a timeline: a sideways scroll pans, an up/down scroll zooms around
 *  `x` (px from the plot's left edge), in steps that suit the event's delta unit. */
export function applyWheel(view: Viewport, event: WheelEvent, x: number): void {
  const unit = event.deltaMode === 1 ? 0.05 : event.deltaMode === 2 ? 1 : 0.002;
  if (Math.abs(event.deltaX) > Math.abs(event.deltaY)) view.panBy(-event.deltaX);
  else view.zoomAt(x, Math.exp(event.deltaY * unit));
}

/** The wheel over the time area zooms and pans `view`, then calls `changed`; over the row
 *  labels it scrolls the rows as usual. */
export function bindWheel(canvas: HTMLCanvasElement, view: Viewport, signal: AbortSignal, changed: () => void): void {
  canvas.addEventListener("wheel", (event) => {
    const { x } = pointAt(canvas, event);
    if (x < GUTTER_WIDTH) return;
    event.preventDefault();
    applyWheel(view, event, x - GUTTER_WIDTH);
    changed();
  }, { passive: false, signal });
}

/** A press on a timeline's canvas: once the pointer leaves the slop it is a drag, which
 *  pans the time window and scrolls the rows with the pointer. */
export class Press {
  readonly x: number;
  readonly y: number;
  moved = false;
  private lastX: number;
  private readonly scrollTop: number;
  private readonly body: HTMLElement;

  constructor(x: number, y: number, body: HTMLElement) {
    this.x = x;
    this.y = y;
    this.lastX = x;
    this.body = body;
    this.scrollTop = body.scrollTop;
  }

  /** Whether the pointer at (x, y) makes (or has made) this press a drag. */
  dragsTo(x: number, y: number): boolean {
    if (!this.moved && Math.hypot(x - this.x, y - this.y) < DRAG_SLOP) return false;
    this.moved = true;
    return true;
  }

  /** Pans `view` by the pointer's travel since the last call, and scrolls the rows with it. */
  pan(view: Viewport, x: number, y: number): void {
    view.panBy(x - this.lastX);
    this.lastX = x;
    this.body.scrollTop = this.scrollTop - (y - this.y);
  }
}

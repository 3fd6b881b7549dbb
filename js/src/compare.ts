// Several traced runs stacked on one time axis: each run its own swimlanes (drawn by the
// timeline's painter), one shared viewport, so zoom and pan move every run in step.

import { readTheme } from "./charttheme";
import { element, fitCanvas } from "./dom";
import { bindWheel, pointAt, Press } from "./input";
import { buildLanes, layoutRows, type Row } from "./lanes";
import { AXIS_HEIGHT, GUTTER_WIDTH, Painter, type Theme } from "./painter";
import { decodePayload, type Payload, type TimelineData } from "./payload";
import { formatTime } from "./timefmt";
import { Viewport } from "./viewport";

/** One run as Python sends it (gwatch_nb/compare_html.py, compare_widget.py). */
export interface CompareRun {
  label: string;
  color: string;
  payload: Payload;
}

const MIN_RUN_HEIGHT = 120;

class RunLane {
  readonly data: TimelineData;
  readonly painter: Painter;
  readonly body: HTMLDivElement;
  readonly canvas: HTMLCanvasElement;
  readonly rows: Row[];
  private frames = 0;

  constructor(parent: HTMLElement, run: CompareRun, maxHeight: number) {
    this.data = decodePayload(run.payload);
    this.painter = new Painter(this.data);
    const section = element("div", "gw-compare-run", parent);
    const head = element("div", "gw-compare-head", section);
    element("span", "gw-compare-swatch", head).style.background = run.color;
    element("span", "gw-compare-label", head).textContent = run.label;
    const info = this.data.launches[0];
    element("span", "gw-compare-info", head).textContent = info
      ? `${info.kernel} · grid (${info.grid.join(", ")}) · ${info.warps.toLocaleString("en-US")} warps · `
        + `${formatTime(info.duration_ns)}${this.data.launches.length > 1 ? ` · launch 0 of ${this.data.launches.length}` : ""}`
      : "no launch";
    const legend = element("div", "gw-legend", section);
    this.data.scopeNames.forEach((name, index) => {
      const item = element("span", "gw-legend-item", legend);
      element("span", "gw-swatch", item).style.background = this.data.scopeColors[index];
      element("span", "gw-legend-name", item).textContent = name;
    });
    this.body = element("div", "gw-body", section);
    this.canvas = element("canvas", "gw-canvas", this.body);
    this.canvas.setAttribute("role", "img");
    this.canvas.setAttribute("aria-label", `${run.label}: scope instances per warp over time`);
    const spacer = element("div", "gw-spacer", this.body);
    const layout = info ? layoutRows(buildLanes(this.data, 0).roots) : { rows: [], height: 0 };
    this.rows = layout.rows;
    const height = Math.min(maxHeight, AXIS_HEIGHT + layout.height);
    this.body.style.height = `${height}px`;
    spacer.style.height = `${Math.max(0, AXIS_HEIGHT + layout.height - height)}px`;
  }

  get durationNs(): number {
    return this.data.launches[0]?.duration_ns ?? 0;
  }

  draw(view: Viewport, theme: Theme): void {
    const width = this.body.clientWidth;
    const height = this.body.clientHeight;
    if (width === 0 || height === 0) return;
    const dpr = fitCanvas(this.canvas, width, height);
    const ctx = this.canvas.getContext("2d");
    if (!ctx) return;
    this.painter.draw(ctx, {
      rows: this.rows, scrollTop: this.body.scrollTop, widthPx: width, heightPx: height, dpr, view, theme,
      hovered: -1, selected: -1, placeOf: () => null,
    });
    this.frames += 1;
    this.body.dataset.frames = String(this.frames);
  }
}

export class CompareTimelines {
  private readonly root: HTMLDivElement;
  private readonly lanes: RunLane[];
  private readonly view = new Viewport();
  private readonly durationNs: number;
  private theme: Theme | null = null;
  private frameRequested = false;
  private drag: { press: Press; lane: RunLane } | null = null;

  constructor(el: HTMLElement, runs: CompareRun[], height: number, signal: AbortSignal) {
    this.root = element("div", "gw-timeline gw-compare", el);
    const toolbar = element("div", "gw-toolbar", this.root);
    element("span", "gw-status", toolbar).textContent = `${runs.length} runs on one time axis`;
    element("span", "gw-time-source", toolbar).textContent = "0 = each launch's first warp entry";
    const perRun = Math.max(MIN_RUN_HEIGHT, Math.floor(height / Math.max(runs.length, 1)));
    this.lanes = runs.map((run) => new RunLane(this.root, run, perRun));
    element("span", "gw-hint", element("div", "gw-footer", this.root)).textContent =
      "wheel: zoom every run · drag: pan every run · double-click: whole launches";
    this.durationNs = Math.max(1, ...this.lanes.map((lane) => lane.durationNs));
    this.bindInput(signal);
    signal.addEventListener("abort", () => this.root.remove());
    this.view.reset(this.durationNs, this.timeWidth());
    this.requestDraw();
  }

  private timeWidth(): number {
    return Math.max(1, (this.lanes[0]?.body.clientWidth ?? 0) - GUTTER_WIDTH);
  }

  private bindInput(signal: AbortSignal): void {
    for (const lane of this.lanes) {
      const canvas = lane.canvas;
      bindWheel(canvas, this.view, signal, () => this.requestDraw());
      canvas.addEventListener("pointerdown", (event) => {
        if (event.button !== 0) return;
        const { x, y } = pointAt(canvas, event);
        this.drag = { press: new Press(x, y, lane.body), lane };
        canvas.setPointerCapture(event.pointerId);
      }, { signal });
      canvas.addEventListener("pointermove", (event) => {
        const drag = this.drag;
        if (!drag || drag.lane !== lane) return;
        const { x, y } = pointAt(canvas, event);
        if (!drag.press.dragsTo(x, y)) return;
        drag.press.pan(this.view, x, y);
        this.requestDraw();
      }, { signal });
      canvas.addEventListener("pointerup", (event) => {
        this.drag = null;
        if (canvas.hasPointerCapture(event.pointerId)) canvas.releasePointerCapture(event.pointerId);
      }, { signal });
      canvas.addEventListener("dblclick", () => {
        this.view.reset(this.durationNs, this.timeWidth());
        this.requestDraw();
      }, { signal });
      lane.body.addEventListener("scroll", () => this.requestDraw(), { signal });
    }
    const resize = new ResizeObserver(() => {
      this.view.resize(this.timeWidth());
      this.theme = null;
      this.requestDraw();
    });
    if (this.lanes[0]) resize.observe(this.lanes[0].body);
    signal.addEventListener("abort", () => resize.disconnect());
  }

  private requestDraw(): void {
    if (this.frameRequested) return;
    this.frameRequested = true;
    requestAnimationFrame(() => {
      this.frameRequested = false;
      this.theme ??= readTheme(this.root);
      for (const lane of this.lanes) lane.draw(this.view, this.theme);
      // The shared window, for tests and benchmarks: every run is drawn with it.
      this.root.dataset.startNs = this.view.startNs.toFixed(3);
      this.root.dataset.nsPerPx = this.view.nsPerPx.toPrecision(6);
    });
  }
}

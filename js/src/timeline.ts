// The timeline component: DOM, input handling and model binding around the painter.

import { buildLanes, layoutRows, rowAt, shownNode, ROW_PADDING, TRACK_HEIGHT, type LaneNode, type Lanes, type Row } from "./lanes";
import { firstStartingAt } from "./lod";
import { showDetails, sitesOf, stallsOf } from "./details";
import { onThemeChange, readTheme } from "./charttheme";
import { element, fitCanvas } from "./dom";
import { bindWheel, pointAt, Press } from "./input";
import { AXIS_HEIGHT, GUTTER_WIDTH, Painter, type Theme } from "./painter";
import { decodePayload, type Payload, type TimelineData } from "./payload";
import { findMatches, parseQuery } from "./search";
import { formatExactNs, formatTime } from "./timefmt";
import { Viewport } from "./viewport";

/** What the timeline needs of an anywidget model (the report page supplies its own). */
export interface WidgetModel {
  get(name: string): any;
  set(name: string, value: unknown): void;
  save_changes(): void;
  on(event: string, callback: () => void): void;
  off(event?: string | null, callback?: (() => void) | null): void;
}

/** A slice this many pixels away still counts as hovered. */
const PICK_SLOP = 3;
/** A second press this soon and this near the first is a double-click's (Chromium's defaults). */
const DOUBLE_CLICK_MS = 500;
const DOUBLE_CLICK_PX = 4;
/** W zooms in, S out, by this factor a press (about what one wheel notch does). */
const KEY_ZOOM = 1.25;
/** A and D pan by this share of the window a press. */
const KEY_PAN_SHARE = 0.2;

export class Timeline {
  private readonly model: WidgetModel;
  private readonly data: TimelineData;
  private readonly painter: Painter;
  private readonly view = new Viewport();
  private readonly root: HTMLDivElement;
  private readonly body: HTMLDivElement;
  private readonly canvas: HTMLCanvasElement;
  private readonly spacer: HTMLDivElement;
  private readonly tooltip: HTMLDivElement;
  private readonly status: HTMLSpanElement;
  private readonly selection: HTMLSpanElement;
  private readonly details: HTMLDivElement;
  private readonly rulerText: HTMLSpanElement;
  private readonly searchBox: HTMLInputElement;
  private readonly searchCount: HTMLSpanElement;
  private readonly legendItems: HTMLButtonElement[] = [];
  private launchSelect: HTMLSelectElement | null = null;
  private readonly lanesByLaunch = new Map<number, Lanes>();
  private launch = -1;
  private lanes!: Lanes;
  private rows: Row[] = [];
  private rowOf = new Map<LaneNode, Row>();
  private contentHeight = 0;
  private maxHeight = 520;
  private theme!: Theme;
  private hovered = -1;
  private selected = -1;
  /** Set by a click that selected: the selection before it, which a double-click restores. */
  private selectedBeforeClick: number | null = null;
  private lastPress = { time: -Infinity, x: 0, y: 0 };
  private frameRequested = false;
  private frames = 0;
  /** The press in progress: whether it is a double-click's second, whether it measures (shift). */
  private drag: { press: Press; second: boolean; ruler: boolean } | null = null;
  /** Per scope, 1 where the legend turned it off. */
  private readonly hiddenScopes: Uint8Array;
  /** The search's matches: a flag per instance and the list in start order; null when no search. */
  private matches: { flags: Uint8Array; ordered: Int32Array } | null = null;
  /** The match the last jump went to, -1 before the first. */
  private matchCursor = -1;
  private ruler: { fromNs: number; toNs: number } | null = null;
  /** The pointer's x in the time area, null when it is elsewhere: W/S zoom around it. */
  private pointerX: number | null = null;

  constructor(el: HTMLElement, model: WidgetModel, signal: AbortSignal) {
    this.model = model;
    this.data = decodePayload(model.get("payload") as Payload);
    this.painter = new Painter(this.data);
    this.hiddenScopes = new Uint8Array(this.data.scopeNames.length);

    this.root = element("div", "gw-timeline", el);
    const toolbar = element("div", "gw-toolbar", this.root);
    this.buildLaunchPicker(toolbar, signal);
    this.status = element("span", "gw-status", toolbar);
    this.buildTimeSource(toolbar);
    this.buildNotes(toolbar);
    this.buildWarnings(toolbar);
    [this.searchBox, this.searchCount] = this.buildSearch(toolbar, signal);
    this.buildLegend(signal);
    this.body = element("div", "gw-body", this.root);
    this.canvas = element("canvas", "gw-canvas", this.body);
    this.canvas.setAttribute("role", "img");
    this.canvas.setAttribute("aria-label", "scope instances per warp over time");
    this.canvas.tabIndex = 0; // focusable, for the W/A/S/D keys
    this.spacer = element("div", "gw-spacer", this.body);
    this.tooltip = element("div", "gw-tooltip", this.root);
    this.tooltip.hidden = true;
    const footer = element("div", "gw-footer", this.root);
    element("span", "gw-hint", footer).textContent =
      "wheel or W/S: zoom · drag or A/D: pan · shift+drag: measure · double-click: whole launch · "
      + "click: select · click a group: expand/collapse";
    this.rulerText = element("span", "gw-ruler", footer);
    this.selection = element("span", "gw-selection", footer);
    this.details = element("div", "gw-details", this.root);
    this.details.hidden = true;

    this.bindInput(signal);
    this.bindModel(signal);
    signal.addEventListener("abort", () => this.root.remove());
    this.setHeight();
    this.showLaunch(this.clampLaunch(model.get("launch")));
    this.setSelected(model.get("selected"));
  }

  // ------------------------------------------------------------------ building

  private buildLaunchPicker(toolbar: HTMLElement, signal: AbortSignal): void {
    const launches = this.data.launches;
    if (launches.length < 2) return;
    const label = element("label", "gw-launch", toolbar);
    label.append("launch ");
    const select = element("select", "gw-launch-select", label);
    this.launchSelect = select;
    launches.forEach((launch, index) => {
      const option = element("option", "", select);
      option.value = String(index);
      option.textContent = `${index}: ${launch.kernel} · ${formatTime(launch.duration_ns)}`;
    });
    select.addEventListener("change", () => {
      this.model.set("launch", Number(select.value));
      this.model.save_changes();
      this.showLaunch(Number(select.value));
    }, { signal });
  }

  private buildTimeSource(toolbar: HTMLElement): void {
    const source = element("span", "gw-time-source", toolbar);
    const host = this.data.tier === "interpreter";
    // The sass tier reads the clock at instructions of the compiled kernel: say which GPU tier.
    source.textContent = host ? "host time (interpreter), not GPU time"
      : this.data.tier === "sass" ? "GPU time (sass tier)" : "GPU time";
    source.classList.toggle("gw-host-time", host);
    source.title = `time: ${this.data.timeSource}; 0 = the launch's first warp entry`;
  }

  private buildNotes(toolbar: HTMLElement): void {
    // The last note says what tracing cost; its figure shows, the details in the tooltip.
    const notes = this.data.notes;
    if (!notes.length) return;
    const span = element("span", "gw-notes", toolbar);
    span.textContent = notes[notes.length - 1].split(" (")[0];
    span.title = notes.join("\n");
  }

  private buildWarnings(toolbar: HTMLElement): void {
    const warnings = this.data.warnings;
    if (!warnings.length) return;
    const badge = element("span", "gw-warning-badge", toolbar);
    badge.textContent = `⚠ ${warnings.length} warning${warnings.length === 1 ? "" : "s"}`;
    badge.title = warnings.join("\n");
  }

  private buildSearch(toolbar: HTMLElement, signal: AbortSignal): [HTMLInputElement, HTMLSpanElement] {
    const box = element("input", "gw-search", toolbar);
    box.type = "search";
    box.placeholder = "search: scope, block 3, warp 5, sm 12";
    box.title = "a scope's name (or part of it), block N (or block x,y,z), warp N, sm N; terms combine. "
      + "Enter: next match, shift+Enter: previous, Escape: clear";
    box.setAttribute("aria-label", "search scope instances");
    const count = element("span", "gw-search-count", toolbar);
    box.addEventListener("input", () => this.search(), { signal });
    box.addEventListener("keydown", (event) => {
      if (event.key === "Enter") {
        event.preventDefault();
        this.jumpToMatch(event.shiftKey ? -1 : 1);
      } else if (event.key === "Escape") {
        box.value = "";
        this.search();
      }
    }, { signal });
    return [box, count];
  }

  private buildLegend(signal: AbortSignal): void {
    const legend = element("div", "gw-legend", this.root);
    this.data.scopeNames.forEach((name, index) => {
      const item = element("button", "gw-legend-item", legend);
      item.type = "button";
      item.title = `show or hide ${name}`;
      item.setAttribute("aria-pressed", "true");
      const swatch = element("span", "gw-swatch", item);
      swatch.style.background = this.data.scopeColors[index];
      element("span", "gw-legend-name", item).textContent = name;
      item.addEventListener("click", () => this.toggleScope(index), { signal });
      this.legendItems.push(item);
    });
  }

  // ------------------------------------------------------------------ state

  private clampLaunch(value: unknown): number {
    const index = Number(value);
    return Number.isInteger(index) && index >= 0 && index < this.data.launches.length ? index : 0;
  }

  private showLaunch(index: number): void {
    if (index === this.launch) return;
    this.launch = index;
    if (this.launchSelect) this.launchSelect.value = String(index);
    let lanes = this.lanesByLaunch.get(index);
    if (!lanes) {
      lanes = buildLanes(this.data, index);
      this.lanesByLaunch.set(index, lanes);
    }
    this.lanes = lanes;
    this.relayout();
    this.view.reset(this.data.launches[index].duration_ns, this.timeWidth());
    const info = this.data.launches[index];
    this.status.textContent = `${info.kernel} · grid (${info.grid.join(", ")}) · block (${info.block.join(", ")}) · `
      + `${info.warps.toLocaleString("en-US")} warps · ${info.instances.toLocaleString("en-US")} scope instances · `
      + formatTime(info.duration_ns) + (info.config ? ` · ${info.config}` : "");
    this.setHovered(-1);
    this.ruler = null;
    this.showRuler();
    this.search();
  }

  private relayout(): void {
    const layout = layoutRows(this.lanes.roots);
    this.rows = layout.rows;
    this.rowOf = layout.rowOf;
    this.contentHeight = layout.height;
    // The rows area is as tall as its rows, up to the `height` trait; beyond, it scrolls.
    const height = Math.min(this.maxHeight, AXIS_HEIGHT + this.contentHeight);
    if (this.body.style.height !== `${height}px`) this.body.style.height = `${height}px`;
    this.spacer.style.height = `${Math.max(0, AXIS_HEIGHT + this.contentHeight - height)}px`;
  }

  private setHeight(): void {
    this.maxHeight = Math.max(120, Number(this.model.get("height")) || 520);
  }

  private setSelected(value: unknown): void {
    const row = (value as { row?: unknown } | null)?.row;
    this.selected = typeof row === "number" && row >= 0 && row < this.data.instances.count ? row : -1;
    this.selection.textContent = this.selected >= 0 ? `selected: ${this.describeShort(this.selected)}` : "";
    const d = this.selected >= 0 ? this.describe(this.selected) : null;
    const scope = d ? String(d.scope) : "";
    const kernel = d ? String(d.kernel) : "";
    showDetails(this.details, scope, d ? sitesOf(this.data.sites, kernel, scope) : [], this.data.sitesRule,
                d ? stallsOf(this.data.stalls, kernel, scope) : [], this.data.stallPeriod);
    this.requestDraw();
  }

  private select(instance: number): void {
    this.model.set("selected", instance >= 0 ? this.describe(instance) : {});
    this.model.save_changes();
    this.setSelected(instance >= 0 ? { row: instance } : {});
  }

  private setHovered(instance: number): void {
    if (instance === this.hovered) return;
    this.hovered = instance;
    this.requestDraw();
  }

  private toggleScope(index: number): void {
    this.hiddenScopes[index] ^= 1;
    const shown = !this.hiddenScopes[index];
    this.legendItems[index].classList.toggle("gw-legend-off", !shown);
    this.legendItems[index].setAttribute("aria-pressed", String(shown));
    this.setHovered(-1);
    // A hidden scope's instance is not drawn, so it cannot stay selected either.
    if (!shown && this.selected >= 0 && this.data.instances.scope[this.selected] === index) this.select(-1);
    this.search();
  }

  /** Reads the search box: finds its matches in this launch (hidden scopes left out), redraws. */
  private search(): void {
    const text = this.searchBox.value.trim();
    const query = text ? parseQuery(text, this.data.scopeNames) : null;
    this.matchCursor = -1;
    this.searchBox.classList.toggle("gw-search-error", typeof query === "string");
    if (query === null || typeof query === "string") {
      this.matches = null;
      this.searchCount.textContent = query ?? "";
      delete this.root.dataset.matches;
    } else {
      this.matches = findMatches(this.data, this.lanes.leafOfWarp.keys(), query, this.hiddenScopes);
      this.showMatchCount();
    }
    this.requestDraw();
  }

  private showMatchCount(): void {
    const n = this.matches?.ordered.length ?? 0;
    const cursor = this.matchCursor >= 0 ? `${(this.matchCursor + 1).toLocaleString("en-US")} of ` : "";
    this.searchCount.textContent = `${cursor}${n.toLocaleString("en-US")} match${n === 1 ? "" : "es"}`;
    this.root.dataset.matches = String(n);
  }

  /** The next (step 1) or previous (-1) match in start order: its group expanded, the view centred on it, selected. */
  private jumpToMatch(step: number): void {
    const ordered = this.matches?.ordered;
    if (!ordered?.length) return;
    const n = ordered.length;
    this.matchCursor = this.matchCursor < 0 ? (step > 0 ? 0 : n - 1) : (this.matchCursor + step + n) % n;
    const instance = ordered[this.matchCursor];
    const leaf = this.lanes.leafOfWarp.get(this.warpOf(instance))!;
    for (let node = leaf.parent; node; node = node.parent) node.collapsed = false;
    this.relayout();
    const row = this.rowOf.get(leaf)!;
    const rowsHeight = this.body.clientHeight - AXIS_HEIGHT;
    this.body.scrollTop = Math.max(0, row.top + row.height / 2 - rowsHeight / 2);
    const { startNs, durationNs } = this.data.instances;
    this.view.centreOn(startNs[instance] + durationNs[instance] / 2, durationNs[instance]);
    this.showMatchCount();
    this.select(instance);
  }

  private showRuler(): void {
    const ruler = this.ruler;
    this.rulerText.textContent = ruler
      ? `ruler: ${formatTime(Math.abs(ruler.toNs - ruler.fromNs))} (${formatExactNs(Math.min(ruler.fromNs, ruler.toNs))}`
        + ` → ${formatExactNs(Math.max(ruler.fromNs, ruler.toNs))})`
      : "";
    if (ruler) this.root.dataset.rulerNs = String(Math.abs(ruler.toNs - ruler.fromNs));
    else delete this.root.dataset.rulerNs;
  }

  private clearRuler(): void {
    if (!this.ruler) return;
    this.ruler = null;
    this.showRuler();
    this.requestDraw();
  }

  /** W/S zoom around the pointer (or the window's centre), A/D pan, Escape clears the ruler. */
  private onKey(event: KeyboardEvent): void {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const width = this.timeWidth();
    const anchor = this.pointerX ?? width / 2;
    switch (event.key.toLowerCase()) {
      case "w": this.view.zoomAt(anchor, 1 / KEY_ZOOM); break;
      case "s": this.view.zoomAt(anchor, KEY_ZOOM); break;
      case "a": this.view.panBy(width * KEY_PAN_SHARE); break;
      case "d": this.view.panBy(-width * KEY_PAN_SHARE); break;
      case "escape": this.clearRuler(); return;
      default: return;
    }
    event.preventDefault();
    this.hideTooltip();
    this.requestDraw();
  }

  // ------------------------------------------------------------------ instances

  private warpOf(instance: number): number {
    const first = this.data.warps.first;
    let lo = 0;
    let hi = this.data.warps.count - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (first[mid] <= instance) lo = mid; else hi = mid - 1;
    }
    return lo;
  }

  /** Everything about one instance, as `selected` carries it to Python. */
  private describe(instance: number): Record<string, unknown> {
    const i = this.data.instances;
    const w = this.data.warps;
    const warp = this.warpOf(instance);
    const launch = w.launch[warp];
    return {
      row: instance, launch, kernel: this.data.launches[launch].kernel, scope: this.data.scopeNames[i.scope[instance]],
      block: [w.blockX[warp], w.blockY[warp], w.blockZ[warp]], warp: w.warp[warp], sm: w.sm[warp],
      start_ns: i.startNs[instance], end_ns: i.startNs[instance] + i.durationNs[instance],
      duration_ns: i.durationNs[instance], depth: i.depth[instance], seq: i.seq[instance],
    };
  }

  private describeShort(instance: number): string {
    const d = this.describe(instance);
    return `${d.scope} · block (${(d.block as number[]).join(", ")}) warp ${d.warp} · SM ${d.sm} · `
      + `start ${formatTime(d.start_ns as number)} · ${formatTime(d.duration_ns as number)}`;
  }

  /** The row on screen and depth where an instance of this launch is drawn, or null. */
  private placeOf = (instance: number): { row: Row; depth: number } | null => {
    const leaf = this.lanes.leafOfWarp.get(this.warpOf(instance));
    const row = leaf && this.rowOf.get(shownNode(leaf));
    if (!row || this.hiddenScopes[this.data.instances.scope[instance]]) return null;
    return { row, depth: this.data.instances.depth[instance] };
  };

  /** The instance under canvas point (x, y), or -1. */
  private pick(x: number, y: number): number {
    if (x < GUTTER_WIDTH || y < AXIS_HEIGHT) return -1;
    const row = rowAt(this.rows, y - AXIS_HEIGHT + this.body.scrollTop);
    if (!row || !row.drawsSlices) return -1;
    const depth = Math.floor((y - AXIS_HEIGHT + this.body.scrollTop - row.top - ROW_PADDING) / TRACK_HEIGHT);
    if (depth < 0 || depth >= row.node.depthCount) return -1;
    const t = this.view.timeAt(x - GUTTER_WIDTH);
    const slop = PICK_SLOP * this.view.nsPerPx;
    const { startNs, durationNs } = this.data.instances;
    const tracks = row.node.depthTracks()[depth] ?? [];
    // A warp's own track: every slice, by binary search. A group: what its row draws now.
    const candidates = tracks.length === 1 ? tracks[0].rows : this.painter.slicesOf(row.node, depth, this.view);
    const last = firstStartingAt(candidates, startNs, t + slop) - 1;
    let best = -1;
    let bestDistance = Infinity;
    const reach = tracks.length === 1 ? Math.max(0, last - 1) : 0;
    for (let k = last; k >= reach; k--) {
      const r = candidates[k];
      if (this.hiddenScopes[this.data.instances.scope[r]]) continue;
      const end = startNs[r] + durationNs[r];
      const distance = t < startNs[r] ? startNs[r] - t : t > end ? t - end : 0;
      if (distance <= slop && (distance < bestDistance || (distance === bestDistance && durationNs[r] > durationNs[best]))) {
        best = r;
        bestDistance = distance;
      }
    }
    return best;
  }

  /** A click on a group's label, or anywhere on an expanded group's header, toggles it. */
  private toggleGroup(x: number, y: number): boolean {
    if (y < AXIS_HEIGHT) return false;
    const row = rowAt(this.rows, y - AXIS_HEIGHT + this.body.scrollTop);
    if (!row || !row.node.isGroup || (x >= GUTTER_WIDTH && row.drawsSlices)) return false;
    row.node.collapsed = !row.node.collapsed;
    this.relayout();
    this.requestDraw();
    return true;
  }

  // ------------------------------------------------------------------ input

  private bindInput(signal: AbortSignal): void {
    const canvas = this.canvas;
    const at = (event: MouseEvent) => pointAt(canvas, event);
    bindWheel(canvas, this.view, signal, () => {
      this.hideTooltip();
      this.requestDraw();
    });
    canvas.addEventListener("pointerdown", (event) => {
      if (event.button !== 0) return;
      const { x, y } = at(event);
      const last = this.lastPress;
      const second = event.timeStamp - last.time < DOUBLE_CLICK_MS && Math.hypot(x - last.x, y - last.y) < DOUBLE_CLICK_PX;
      this.lastPress = second ? { time: -Infinity, x, y } : { time: event.timeStamp, x, y };
      const ruler = event.shiftKey && x >= GUTTER_WIDTH;
      this.drag = { press: new Press(x, y, this.body), second, ruler };
      canvas.setPointerCapture(event.pointerId);
      canvas.focus({ preventScroll: true });
    }, { signal });
    canvas.addEventListener("pointermove", (event) => {
      const { x, y } = at(event);
      this.pointerX = x >= GUTTER_WIDTH ? x - GUTTER_WIDTH : null;
      const drag = this.drag;
      if (!drag) {
        this.hover(x, y);
        return;
      }
      if (!drag.press.dragsTo(x, y)) return;
      this.lastPress.time = -Infinity; // a press that became a drag starts no double-click
      if (drag.ruler) {
        // Shift+drag measures: the band runs from the press to the pointer.
        const bound = (px: number) => this.view.timeAt(Math.max(0, Math.min(px - GUTTER_WIDTH, this.timeWidth())));
        this.ruler = { fromNs: bound(drag.press.x), toNs: bound(x) };
        this.showRuler();
        this.hideTooltip();
        this.requestDraw();
        return;
      }
      canvas.classList.add("gw-dragging");
      drag.press.pan(this.view, x, y);
      this.hideTooltip();
      this.requestDraw();
    }, { signal });
    canvas.addEventListener("pointerup", (event) => {
      const drag = this.drag;
      this.drag = null;
      canvas.classList.remove("gw-dragging");
      if (canvas.hasPointerCapture(event.pointerId)) canvas.releasePointerCapture(event.pointerId);
      // The second click of a double-click does nothing: the double-click resets the zoom.
      if (!drag || drag.press.moved || drag.second) return;
      const { x, y } = at(event);
      this.selectedBeforeClick = null;
      if (this.ruler) {
        this.clearRuler(); // a click clears the ruler, and does only that
        return;
      }
      if (this.toggleGroup(x, y)) return;
      this.selectedBeforeClick = this.selected;
      this.select(this.pick(x, y));
    }, { signal });
    canvas.addEventListener("dblclick", () => {
      // Its first click selected what it hit: a double-click leaves the selection as it was.
      if (this.selectedBeforeClick !== null && this.selected !== this.selectedBeforeClick) {
        this.select(this.selectedBeforeClick);
      }
      this.selectedBeforeClick = null;
      this.view.reset(this.data.launches[this.launch].duration_ns, this.timeWidth());
      this.requestDraw();
    }, { signal });
    canvas.addEventListener("pointerleave", () => {
      this.pointerX = null;
      if (!this.drag) this.hideTooltip();
    }, { signal });
    canvas.addEventListener("keydown", (event) => this.onKey(event), { signal });
    this.body.addEventListener("scroll", () => this.requestDraw(), { signal });
    const resize = new ResizeObserver(() => this.resize());
    resize.observe(this.body);
    signal.addEventListener("abort", () => resize.disconnect());
    const stopWatchingTheme = onThemeChange(() => { this.readTheme(); this.requestDraw(); });
    signal.addEventListener("abort", stopWatchingTheme);
  }

  private bindModel(signal: AbortSignal): void {
    const onLaunch = () => this.showLaunch(this.clampLaunch(this.model.get("launch")));
    const onSelected = () => this.setSelected(this.model.get("selected"));
    const onHeight = () => { this.setHeight(); this.relayout(); };
    this.model.on("change:launch", onLaunch);
    this.model.on("change:selected", onSelected);
    this.model.on("change:height", onHeight);
    signal.addEventListener("abort", () => {
      this.model.off("change:launch", onLaunch);
      this.model.off("change:selected", onSelected);
      this.model.off("change:height", onHeight);
    });
  }

  private hover(x: number, y: number): void {
    const instance = this.pick(x, y);
    this.setHovered(instance);
    if (instance < 0) {
      this.hideTooltip();
      return;
    }
    this.showTooltip(instance, x, y);
  }

  private showTooltip(instance: number, x: number, y: number): void {
    const d = this.describe(instance);
    const tip = this.tooltip;
    tip.replaceChildren();
    element("div", "gw-tooltip-title", tip).textContent = String(d.scope);
    const lines = [
      `block (${(d.block as number[]).join(", ")}) · warp ${d.warp} · SM ${d.sm}`,
      `start ${formatTime(d.start_ns as number)} (${formatExactNs(d.start_ns as number)})`,
      `duration ${formatTime(d.duration_ns as number)}`,
      `instance ${(d.seq as number) + 1} of ${d.scope} in this warp (seq ${d.seq})`
        + ((d.depth as number) > 0 ? ` · depth ${d.depth}` : ""),
    ];
    for (const line of lines) element("div", "gw-tooltip-line", tip).textContent = line;
    tip.hidden = false;
    const box = this.root.getBoundingClientRect();
    const canvasBox = this.canvas.getBoundingClientRect();
    // Beside the pointer, on whichever side keeps it inside the widget.
    const px = canvasBox.left - box.left + x;
    const py = canvasBox.top - box.top + y;
    const left = px + 14 + tip.offsetWidth <= box.width ? px + 14 : Math.max(0, px - 14 - tip.offsetWidth);
    const top = py + 14 + tip.offsetHeight <= box.height ? py + 14 : Math.max(0, py - 14 - tip.offsetHeight);
    tip.style.left = `${left}px`;
    tip.style.top = `${top}px`;
  }

  private hideTooltip(): void {
    this.tooltip.hidden = true;
    this.setHovered(-1);
  }

  // ------------------------------------------------------------------ drawing

  private timeWidth(): number {
    return Math.max(1, this.body.clientWidth - GUTTER_WIDTH);
  }

  private resize(): void {
    this.fitSearchBox();
    this.view.resize(this.timeWidth());
    this.relayout();
    this.readTheme();
    this.requestDraw();
  }

  /** Widens the search box to its whole placeholder, in the font the page gives it (known
   *  once the widget is on the page and styled). */
  private fitSearchBox(): void {
    const box = this.searchBox;
    const style = getComputedStyle(box);
    const ctx = document.createElement("canvas").getContext("2d");
    if (!ctx || !style.fontSize) return;
    ctx.font = `${style.fontStyle} ${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
    const text = Math.ceil(ctx.measureText(box.placeholder).width);
    // Chromium sizes search boxes by their border box: then padding and border count too.
    const chrome = style.boxSizing === "border-box"
      ? box.offsetWidth - box.clientWidth + parseFloat(style.paddingLeft) + parseFloat(style.paddingRight) : 0;
    box.style.minWidth = `${text + chrome + 2}px`;
  }

  private readTheme(): void {
    this.theme = readTheme(this.root);
  }

  private requestDraw(): void {
    if (this.frameRequested) return;
    this.frameRequested = true;
    requestAnimationFrame(() => {
      this.frameRequested = false;
      this.draw();
    });
  }

  private draw(): void {
    const width = this.body.clientWidth;
    const height = this.body.clientHeight;
    if (width === 0 || height === 0) return; // not attached yet; the resize observer calls back
    if (!this.theme) this.readTheme();
    const began = performance.now();
    const dpr = fitCanvas(this.canvas, width, height);
    const ctx = this.canvas.getContext("2d");
    if (!ctx) return;
    this.painter.draw(ctx, {
      rows: this.rows, scrollTop: this.body.scrollTop, widthPx: width, heightPx: height, dpr,
      view: this.view, theme: this.theme, hovered: this.hovered, selected: this.selected, placeOf: this.placeOf,
      hiddenScopes: this.hiddenScopes, matches: this.matches?.flags ?? null, ruler: this.ruler,
    });
    // Timings and the window on the element, for benchmarks and tests: draw cost, frame
    // count, first paint, the ns at the time axis's two ends.
    const ended = performance.now();
    this.frames += 1;
    this.root.dataset.viewStartNs = String(this.view.startNs);
    this.root.dataset.viewEndNs = String(this.view.endNs);
    this.root.dataset.drawMs = (ended - began).toFixed(2);
    this.root.dataset.frames = String(this.frames);
    if (this.frames === 1) this.root.dataset.firstPaintMs = ended.toFixed(1);
  }
}

// An exported page's mounting (gwatch_nb/html.py's reports, compare_html.py's comparisons):
// each run's timeline, each comparison's runs in step, and the charts, from the data
// embedded in the page. Everything is inline, so the page works offline; nothing here
// requests a URL.

import embed from "vega-embed";
import { CompareTimelines, type CompareRun } from "./compare";
import { showFailure } from "./dom";
import { Timeline, type WidgetModel } from "./timeline";

/** A widget model without a kernel: state in memory, change events to local listeners. */
class StaticModel implements WidgetModel {
  private readonly state: Record<string, unknown>;
  private readonly listeners = new Map<string, Set<() => void>>();

  constructor(state: Record<string, unknown>) {
    this.state = state;
  }

  get(name: string): any {
    return this.state[name];
  }

  set(name: string, value: unknown): void {
    this.state[name] = value;
    this.listeners.get(`change:${name}`)?.forEach((callback) => callback());
  }

  save_changes(): void {}

  on(event: string, callback: () => void): void {
    if (!this.listeners.has(event)) this.listeners.set(event, new Set());
    this.listeners.get(event)!.add(callback);
  }

  off(event?: string | null, callback?: (() => void) | null): void {
    if (!event) this.listeners.clear();
    else if (!callback) this.listeners.delete(event);
    else this.listeners.get(event)?.delete(callback);
  }
}

/** Bytes of a zlib stream given in base64 (how html.py embeds binary columns). */
async function inflate(base64: string): Promise<DataView> {
  const stream = new Blob([fromBase64(base64)]).stream().pipeThrough(new DecompressionStream("deflate"));
  return new DataView(await new Response(stream).arrayBuffer());
}

function fromBase64(base64: string): Uint8Array<ArrayBuffer> {
  // Native where the browser has it (much faster on megabytes), atob elsewhere.
  const native = (Uint8Array as unknown as { fromBase64?: (text: string) => Uint8Array<ArrayBuffer> }).fromBase64;
  if (native) return native.call(Uint8Array, base64);
  const text = atob(base64);
  const bytes = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
  return bytes;
}

/** The state with every {"$zlib_base64": …} replaced by the bytes it holds. */
async function restoreBuffers(value: unknown): Promise<unknown> {
  if (Array.isArray(value)) return Promise.all(value.map(restoreBuffers));
  if (value === null || typeof value !== "object") return value;
  const packed = (value as Record<string, unknown>).$zlib_base64;
  if (typeof packed === "string") return inflate(packed);
  const entries = await Promise.all(Object.entries(value).map(async ([k, v]) => [k, await restoreBuffers(v)] as const));
  return Object.fromEntries(entries);
}

function embedded(id: string | undefined): unknown {
  const script = id ? document.getElementById(id) : null;
  if (!script) throw new Error(`gwatch-nb: the page lacks its data block ${id}`);
  return JSON.parse(script.textContent ?? "");
}

/** A run of several launches has charts per launch: show those of the launch picked. */
function showChartsOfLaunch(run: Element | null, launch: unknown): void {
  run?.querySelectorAll<HTMLElement>(".gw-charts[data-gw-launch]").forEach((charts) => {
    charts.hidden = charts.dataset.gwLaunch !== String(launch);
  });
}

async function mountTimeline(el: HTMLElement): Promise<void> {
  const state = (await restoreBuffers(embedded(el.dataset.gwTimeline))) as Record<string, unknown>;
  const model = new StaticModel(state);
  new Timeline(el, model, new AbortController().signal);
  const run = el.closest(".gw-run");
  model.on("change:launch", () => showChartsOfLaunch(run, model.get("launch")));
}

async function mountComparison(el: HTMLElement): Promise<void> {
  const state = (await restoreBuffers(embedded(el.dataset.gwCompare))) as { runs: CompareRun[]; height: number };
  new CompareTimelines(el, state.runs, state.height, new AbortController().signal);
}

async function mountChart(el: HTMLElement): Promise<void> {
  await embed(el, embedded(el.dataset.gwChart) as object, { actions: false, renderer: "svg" });
}

/**
 * Mount each timeline, comparison and chart of the page when it comes near the screen: a
 * long report stays light. Charts wait for the timelines already mounting, which then
 * paint first. A page without them (a notebook importing the charts widget) gets nothing.
 */
export function mountPage(): void {
  const pending = new Map<Element, () => Promise<void>>();
  const timelines: Promise<unknown>[] = [];
  const mounts: [string, (el: HTMLElement) => Promise<void>][] = [
    ["[data-gw-timeline]", mountTimeline], ["[data-gw-compare]", mountComparison]];
  for (const [selector, mount] of mounts) {
    document.querySelectorAll<HTMLElement>(selector).forEach((el) => pending.set(el, () => {
      const mounted = mount(el);
      timelines.push(mounted.catch(() => undefined));
      return mounted;
    }));
  }
  document.querySelectorAll<HTMLElement>("[data-gw-chart]").forEach((el) => pending.set(el, async () => {
    await Promise.all(timelines.slice());
    await mountChart(el);
  }));
  const observer = new IntersectionObserver((entries) => {
    for (const entry of entries) {
      const mount = entry.isIntersecting ? pending.get(entry.target) : undefined;
      if (!mount) continue;
      pending.delete(entry.target);
      observer.unobserve(entry.target);
      mount().catch((error) => showFailure(entry.target as HTMLElement, error));
    }
  }, { rootMargin: "600px 0px" });
  pending.forEach((_, el) => observer.observe(el));
}

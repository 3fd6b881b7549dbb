// The runtime of an exported HTML report (gwatch_nb/html.py): it mounts each run's
// timeline and charts from the data embedded in the page. Everything is inline, so the
// page works offline; nothing here requests a URL.

import embed from "vega-embed";
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
export async function restoreBuffers(value: unknown): Promise<unknown> {
  if (Array.isArray(value)) return Promise.all(value.map(restoreBuffers));
  if (value === null || typeof value !== "object") return value;
  const packed = (value as Record<string, unknown>).$zlib_base64;
  if (typeof packed === "string") return inflate(packed);
  const entries = await Promise.all(Object.entries(value).map(async ([k, v]) => [k, await restoreBuffers(v)] as const));
  return Object.fromEntries(entries);
}

function embedded(id: string | undefined): unknown {
  const script = id ? document.getElementById(id) : null;
  if (!script) throw new Error(`gwatch-nb: the report lacks its data block ${id}`);
  return JSON.parse(script.textContent ?? "");
}

async function mountTimeline(el: HTMLElement): Promise<void> {
  const state = (await restoreBuffers(embedded(el.dataset.gwTimeline))) as Record<string, unknown>;
  new Timeline(el, new StaticModel(state), new AbortController().signal);
}

async function mountChart(el: HTMLElement): Promise<void> {
  await embed(el, embedded(el.dataset.gwChart) as object, { actions: false, renderer: "svg" });
}

function showFailure(el: HTMLElement, error: unknown): void {
  console.error(error);
  const message = document.createElement("p");
  message.className = "gw-failure";
  message.textContent = `could not show this: ${error instanceof Error ? error.message : String(error)}`;
  el.replaceChildren(message);
}

/**
 * Mount each timeline and chart when it comes near the screen: a long report stays light.
 * Charts wait for the timelines already mounting, which then paint first.
 */
function mountAll(): void {
  const pending = new Map<Element, () => Promise<void>>();
  const timelines: Promise<unknown>[] = [];
  document.querySelectorAll<HTMLElement>("[data-gw-timeline]").forEach((el) => pending.set(el, () => {
    const mounted = mountTimeline(el);
    timelines.push(mounted.catch(() => undefined));
    return mounted;
  }));
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

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", mountAll);
else mountAll();

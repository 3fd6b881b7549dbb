// The details panel under the timeline, for the selected instance: on a sass-tier trace the
// readings of its scope (where each landed in the compiled kernel, how much of other scopes'
// code its pair spans, one word for the boundary's sharpness), as gwatch_nb/site_rows.py
// wrote them; on a trace made with stalls=True, why its scope's warps stalled (the share of
// each reason in its PC samples, gwatch_nb/stall_reasons.py). With neither, no panel.

import type { SiteRow, StallRow } from "./payload";

/** Header, its help, and the cell of a reading under it (null where the column does not apply). */
const COLUMNS: [string, string, (r: SiteRow) => string | number | null][] = [
  ["kind", "start or end reading", (r) => r.kind],
  ["origin", "marker, or the automatic site's kind", (r) => r.origin],
  ["pair", "the pair's number within the scope", (r) => r.pair],
  ["at", "the SASS instruction the reading is taken just before", (r) => r.index],
  ["moved", "how far the reading moved from its site for want of free registers", (r) => (r.moved ? `${r.moved > 0 ? "+" : ""}${r.moved}` : "")],
  ["stores", "the instruction its stores precede", (r) => r.store],
  ["loop", "the loop the pair repeats with (-: once per run)", (r) => r.loop],
  ["span", "the pair's instructions from first to last", (r) => r.span],
  ["own", "of them, the scope's", (r) => r.own],
  ["other", "of them, other scopes' (interleaved by ptxas)", (r) => r.other_scopes],
  ["unscoped", "of them, no scope's", (r) => r.unscoped],
  ["sharpness", "own / span", (r) => (r.sharpness && r.span ? `${r.sharpness} ${Math.round((100 * r.own!) / r.span)}%` : null)],
];

/** The readings of one scope (by name: the timeline knows instances by scope name) in one kernel. */
export function sitesOf(sites: SiteRow[], kernel: string, scope: string): SiteRow[] {
  return sites.filter((s) => s.kernel === kernel && s.scope === scope);
}

/** Columns of words, left-aligned; the others hold numbers. */
const WORDS = new Set(["kind", "origin", "sharpness"]);

function cell(tag: "th" | "td", text: string, parent: HTMLElement, column: string, title?: string): void {
  const node = document.createElement(tag);
  node.textContent = text;
  if (WORDS.has(column)) node.className = "gw-word";
  if (title) node.title = title;
  parent.appendChild(node);
}

/** The stall reasons of one scope in one kernel, most samples first. */
export function stallsOf(stalls: StallRow[], kernel: string, scope: string): StallRow[] {
  return stalls.filter((s) => s.kernel === kernel && s.scope === scope).sort((a, b) => b.samples - a.samples);
}

/** Fills `panel` with the scope's readings and its stall reasons (hides it when there are neither). */
export function showDetails(panel: HTMLElement, scope: string, sites: SiteRow[], rule: string, stalls: StallRow[],
                            period: number): void {
  panel.replaceChildren();
  panel.hidden = sites.length === 0 && stalls.length === 0;
  if (sites.length) showSites(panel, scope, sites, rule);
  if (stalls.length) showStalls(panel, scope, stalls, period);
}

/** Reasons named beside the bar; the bar itself shows them all. */
const REASONS_NAMED = 5;

function showStalls(panel: HTMLElement, scope: string, rows: StallRow[], period: number): void {
  const samples = rows.reduce((sum, r) => sum + r.samples, 0);
  const title = document.createElement("div");
  title.className = "gw-details-title";
  title.textContent = `${scope}: why its warps stalled (${samples.toLocaleString("en-US")} PC samples, one per SM every 2^${period} cycles)`;
  panel.appendChild(title);
  const bar = document.createElement("div");
  bar.className = "gw-stall-bar";
  for (const r of rows) {
    const part = document.createElement("span");
    part.style.width = `${100 * r.share}%`;
    part.style.background = r.colour;
    part.title = `${r.reason}: ${(100 * r.share).toFixed(1)}% (${r.samples.toLocaleString("en-US")} samples)`;
    part.dataset.reason = r.reason;
    bar.appendChild(part);
  }
  panel.appendChild(bar);
  const legend = document.createElement("div");
  legend.className = "gw-stall-legend";
  for (const r of rows.slice(0, REASONS_NAMED)) {
    const item = document.createElement("span");
    const swatch = document.createElement("i");
    swatch.style.background = r.colour;
    item.append(swatch, `${r.reason} ${Math.round(100 * r.share)}%`);
    legend.appendChild(item);
  }
  panel.appendChild(legend);
}

function showSites(panel: HTMLElement, scope: string, rows: SiteRow[], rule: string): void {
  const title = document.createElement("div");
  title.className = "gw-details-title";
  title.textContent = `${scope}: where its readings landed in the compiled kernel`;
  panel.appendChild(title);
  // A column every row leaves empty (no reading moved) is left out; so is the id where one scope has the name.
  const ids = new Set(rows.map((r) => r.scope_id));
  const columns = COLUMNS.filter(([name, , value]) => name !== "moved" || rows.some((r) => value(r) !== ""));
  const table = document.createElement("table");
  table.className = "gw-sites";
  const head = document.createElement("tr");
  if (ids.size > 1) cell("th", "scope id", head, "scope id", "several scopes share this name");
  for (const [name, help] of columns) cell("th", name, head, name, help);
  table.createTHead().appendChild(head);
  const body = table.createTBody();
  for (const row of rows) {
    const tr = document.createElement("tr");
    tr.dataset.site = String(row.site);
    if (ids.size > 1) cell("td", String(row.scope_id), tr, "scope id");
    for (const [name, , value] of columns) {
      const v = value(row);
      cell("td", v === null ? "-" : String(v), tr, name);
    }
    body.appendChild(tr);
  }
  panel.appendChild(table);
  const note = document.createElement("div");
  note.className = "gw-details-rule";
  note.textContent = rule;
  panel.appendChild(note);
}

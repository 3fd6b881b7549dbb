// The runtime of an exported comparison page (gwatch_nb/compare_html.py). Importing the
// report runtime mounts the page's charts ([data-gw-chart]) as in any report and lends
// its decoding of embedded binary columns; this mounts the runs' timelines in step.

import { CompareTimelines, type CompareRun } from "./compare";
import { restoreBuffers } from "./report";

async function mount(el: HTMLElement): Promise<void> {
  const script = el.dataset.gwCompare ? document.getElementById(el.dataset.gwCompare) : null;
  if (!script) throw new Error(`gwatch-nb: the page lacks its data block ${el.dataset.gwCompare}`);
  const state = (await restoreBuffers(JSON.parse(script.textContent ?? ""))) as { runs: CompareRun[]; height: number };
  new CompareTimelines(el, state.runs, state.height, new AbortController().signal);
}

function mountAll(): void {
  document.querySelectorAll<HTMLElement>("[data-gw-compare]").forEach((el) => mount(el).catch((error) => {
    console.error(error);
    const message = document.createElement("p");
    message.className = "gw-failure";
    message.textContent = `could not show this: ${error instanceof Error ? error.message : String(error)}`;
    el.replaceChildren(message);
  }));
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", mountAll);
else mountAll();

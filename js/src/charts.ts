// The anywidget front-end module of gwatch_nb.ChartsWidget: the summary charts drawn with
// the vega-embed bundled here, so a notebook shows them with no network (altair's own
// renderers load vega from a CDN), in the colours of JupyterLab's theme.

import embed, { type Result } from "vega-embed";
import { jupyterChartConfig, onThemeChange } from "./charttheme";

interface ChartsModel {
  get(name: "spec"): object;
  on(event: string, callback: () => void): void;
  off(event?: string | null, callback?: (() => void) | null): void;
}

function render({ model, el, signal }: { model: ChartsModel; el: HTMLElement; signal?: AbortSignal }): () => void {
  const view = document.createElement("div");
  view.className = "gw-charts";
  el.appendChild(view);
  let shown: Result | undefined;
  const draw = async () => {
    shown?.finalize();
    try {
      const config = jupyterChartConfig(el);
      shown = await embed(view, model.get("spec"), { actions: false, renderer: "svg", ...(config ? { config } : {}) });
    } catch (error) {
      console.error(error);
      view.textContent = `could not draw the charts: ${error instanceof Error ? error.message : String(error)}`;
    }
  };
  void draw();
  model.on("change:spec", draw);
  const stopWatchingTheme = onThemeChange(() => void draw());
  // anywidget >= 0.11 passes an AbortSignal; the returned cleanup serves older hosts.
  const cleanup = () => {
    model.off("change:spec", draw);
    stopWatchingTheme();
    shown?.finalize();
  };
  signal?.addEventListener("abort", cleanup);
  return cleanup;
}

export default { render };

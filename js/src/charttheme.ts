// Colours from the page's theme: the charts' from JupyterLab's variables (a dark theme gets
// dark charts; pages without them, like the HTML report, keep vega's own light look), the
// timelines' from the --gw-* variables of widget.css.

import type { Theme } from "./painter";

/** Page-wide attributes JupyterLab changes when the user switches theme. */
export const THEME_ATTRIBUTES = ["data-jp-theme-light", "data-jp-theme-name"];

/** A vega config in the theme's colours, or undefined where the page has no JupyterLab theme. */
export function jupyterChartConfig(el: HTMLElement): Record<string, unknown> | undefined {
  const style = getComputedStyle(el);
  const read = (name: string) => style.getPropertyValue(name).trim();
  const background = read("--jp-layout-color0");
  if (!background) return undefined;
  const text = read("--jp-ui-font-color1") || read("--jp-content-font-color1");
  const muted = read("--jp-ui-font-color2") || text;
  const lines = read("--jp-border-color2") || read("--jp-border-color1") || muted;
  return {
    background,
    title: { color: text, subtitleColor: muted },
    axis: { domainColor: lines, gridColor: lines, tickColor: lines, labelColor: muted, titleColor: text },
    legend: { labelColor: muted, titleColor: text },
    header: { labelColor: text, titleColor: text },
    text: { color: text }, // what a chart says in words (charts.py's cannot_show)
    view: { stroke: lines },
  };
}

/** Calls back whenever JupyterLab switches theme; returns the function that stops it. */
export function onThemeChange(callback: () => void): () => void {
  const observer = new MutationObserver(callback);
  observer.observe(document.body, { attributes: true, attributeFilter: THEME_ATTRIBUTES });
  return () => observer.disconnect();
}

/** The timeline colours in effect at `el` (widget.css's --gw-* variables; the light ones
 *  where the page lacks that stylesheet). */
export function readTheme(el: HTMLElement): Theme {
  const style = getComputedStyle(el);
  const read = (name: string, fallback: string) => style.getPropertyValue(name).trim() || fallback;
  return {
    background: read("--gw-background", "#ffffff"), foreground: read("--gw-foreground", "#1f2328"),
    muted: read("--gw-muted", "#6e7781"), grid: read("--gw-grid", "#e4e7eb"),
    lifetime: read("--gw-lifetime", "#f1f3f5"), header: read("--gw-header", "#f6f8fa"),
    highlight: read("--gw-highlight", "#d6336c"),
  };
}

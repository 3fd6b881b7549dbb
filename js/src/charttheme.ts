// Chart colours from the page's JupyterLab theme: a dark theme gets dark charts. Pages
// without JupyterLab's variables (the HTML report) keep vega's own light look.

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
    view: { stroke: lines },
  };
}

/** Calls back whenever JupyterLab switches theme; returns the function that stops it. */
export function onThemeChange(callback: () => void): () => void {
  const observer = new MutationObserver(callback);
  observer.observe(document.body, { attributes: true, attributeFilter: THEME_ATTRIBUTES });
  return () => observer.disconnect();
}

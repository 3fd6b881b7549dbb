// The one front-end module that carries the chart library (vega, vega-lite, vega-embed):
// the anywidget module of gwatch_nb.ChartsWidget, and the runtime an exported page
// (gwatch_nb/html.py, compare_html.py) holds inline as a module script, which mounts the
// page's timelines, comparisons and charts. The timeline and comparison widgets keep
// their own small bundles (widget.js, compare_widget.js), having no charts to draw.

import charts from "./charts";
import { mountPage } from "./report";

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", mountPage);
else mountPage();

export default charts;

// The anywidget front-end module of gwatch_nb.TimelineWidget.

import { Timeline, type WidgetModel } from "./timeline";

function render({ model, el, signal }: { model: WidgetModel; el: HTMLElement; signal?: AbortSignal }): () => void {
  // anywidget >= 0.11 passes an AbortSignal; the returned cleanup serves older hosts.
  const controller = new AbortController();
  signal?.addEventListener("abort", () => controller.abort());
  new Timeline(el, model, controller.signal);
  return () => controller.abort();
}

export default { render };

// The anywidget front-end module of gwatch_nb.CompareWidget: the runs' timelines in step.

import { CompareTimelines, type CompareRun } from "./compare";

interface Model {
  get(name: string): any;
}

function render({ model, el, signal }: { model: Model; el: HTMLElement; signal?: AbortSignal }): () => void {
  const controller = new AbortController();
  signal?.addEventListener("abort", () => controller.abort());
  new CompareTimelines(el, model.get("runs") as CompareRun[], Number(model.get("height")) || 640, controller.signal);
  return () => controller.abort();
}

export default { render };

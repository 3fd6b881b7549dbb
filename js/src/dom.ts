// DOM helpers every front-end piece shares.

/** A new element of `tag` with `className`, appended to `parent` when given. */
export function element<K extends keyof HTMLElementTagNameMap>(tag: K, className: string, parent?: HTMLElement): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  node.className = className;
  parent?.appendChild(node);
  return node;
}

/** Replaces what `el` holds with a one-line account of why it could not be shown. */
export function showFailure(el: HTMLElement, error: unknown): void {
  console.error(error);
  const message = element("p", "gw-failure");
  message.textContent = `could not show this: ${error instanceof Error ? error.message : String(error)}`;
  el.replaceChildren(message);
}

/** Gives the canvas one backing pixel per device pixel over `width` × `height` CSS pixels
 *  (resized only when that changes, which clears it); returns the device pixel ratio. */
export function fitCanvas(canvas: HTMLCanvasElement, width: number, height: number): number {
  const dpr = window.devicePixelRatio || 1;
  if (canvas.width !== Math.round(width * dpr) || canvas.height !== Math.round(height * dpr)) {
    canvas.width = Math.round(width * dpr);
    canvas.height = Math.round(height * dpr);
    canvas.style.width = `${width}px`;
    canvas.style.height = `${height}px`;
  }
  return dpr;
}

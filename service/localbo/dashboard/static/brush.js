// Brushing a rectangle on a canvas: drag inside the plot to draw it, a click (no drag) drops it. The chart
// says where its plot is (inside(x, y)); onDrag(rect) while dragging (to draw the rectangle), onDone(rect |
// null) once it is let go. Rectangles are {x0, y0, x1, y1} in the canvas' CSS pixels, x0 <= x1, y0 <= y1.

const CLICK = 4; // pixels: a drag shorter than this both ways is a click

export function rectBrush(canvas, { inside, onDrag = () => {}, onDone }) {
  let drag = null;
  const at = (event) => {
    const r = canvas.getBoundingClientRect();
    return [event.clientX - r.left, event.clientY - r.top];
  };
  const rect = ([ax, ay], [bx, by]) => ({ x0: Math.min(ax, bx), y0: Math.min(ay, by), x1: Math.max(ax, bx), y1: Math.max(ay, by) });
  canvas.addEventListener("pointerdown", (event) => {
    const p = at(event);
    if (!inside(...p)) return;
    event.preventDefault();
    canvas.setPointerCapture?.(event.pointerId);
    drag = { from: p, to: p };
  });
  canvas.addEventListener("pointermove", (event) => {
    if (!drag) {
      canvas.style.cursor = inside(...at(event)) ? "crosshair" : "";
      return;
    }
    drag.to = at(event);
    onDrag(rect(drag.from, drag.to));
  });
  const finish = (event) => {
    if (!drag) return;
    drag.to = at(event);
    const r = rect(drag.from, drag.to);
    drag = null;
    onDone(r.x1 - r.x0 < CLICK && r.y1 - r.y0 < CLICK ? null : r);
  };
  canvas.addEventListener("pointerup", finish);
  canvas.addEventListener("pointercancel", () => {
    drag = null;
    onDrag(null);
  });
}

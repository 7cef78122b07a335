function render({ model, el }) {
  const img = document.createElement("img");
  img.style.cursor = "pointer";
  img.style.maxWidth = "100%";
  img.title = "click a row: its backward pass is shown below";
  const show = () => {
    img.src = model.get("src");
  };
  img.addEventListener("click", (ev) => {
    const box = img.getBoundingClientRect();
    const y = (ev.clientY - box.top) / box.height; // 0..1 down the image
    const top = model.get("top"),
      bottom = model.get("bottom"),
      rows = model.get("rows");
    if (y < top || y > bottom || rows < 1) return;
    const row = Math.min(rows - 1, Math.floor(((y - top) / (bottom - top)) * rows));
    model.set("row", row);
    model.save_changes();
  });
  model.on("change:src", show);
  show();
  el.appendChild(img);
}
export default { render };

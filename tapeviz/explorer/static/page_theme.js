function render({ model, el }) {
  el.style.display = "none";
  const report = () => {
    const light = document.body.dataset.jpThemeLight;
    const dark = light === undefined ? null : light === "false";
    if (model.get("dark") !== dark) {
      model.set("dark", dark);
      model.save_changes();
    }
  };
  const watch = new MutationObserver(report);
  watch.observe(document.body, { attributes: true, attributeFilter: ["data-jp-theme-light"] });
  report();
  return () => watch.disconnect();
}
export default { render };

// ReDoc's bundle draws the Redocly logo from its CDN in the sidebar footer, whatever its options say. The API
// reference must work offline and send nothing elsewhere, so that one address is rewritten to a file of this
// site before the image asks for it (React sets `src` through setAttribute or the property).
(function () {
  "use strict";
  const script = document.currentScript;
  const local = script ? script.dataset.logo : "";
  const external = (value) => typeof value === "string" && /^https?:\/\/cdn\.redoc\.ly\//.test(value);
  const setAttribute = Element.prototype.setAttribute;
  Element.prototype.setAttribute = function (name, value) {
    return setAttribute.call(this, name, name === "src" && external(value) ? local : value);
  };
  const src = Object.getOwnPropertyDescriptor(HTMLImageElement.prototype, "src");
  Object.defineProperty(HTMLImageElement.prototype, "src", {
    configurable: true,
    enumerable: src.enumerable,
    get() { return src.get.call(this); },
    set(value) { src.set.call(this, external(value) ? local : value); },
  });
})();

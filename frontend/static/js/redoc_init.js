// Starts ReDoc on the page's schema with the settings drf-spectacular rendered (SPECTACULAR_SETTINGS).
(function () {
  "use strict";
  const script = document.currentScript;
  const settings = JSON.parse(script.dataset.settings || "{}");
  window.Redoc.init(script.dataset.schemaUrl, settings, document.getElementById("redoc-container"));
})();

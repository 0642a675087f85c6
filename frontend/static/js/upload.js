// The model upload page: large uploads (a model is often 90 MB or more) show how far they are. The form is
// sent as it would be without this script (same fields, same address); the answer, the next page or the
// form with its errors, then replaces this one.
(function () {
  "use strict";
  const gettext = window.gettext || ((text) => text);  // the /jsi18n/ catalogue (base.html)
  const fmt = (text, values) => text.replace(/%\((\w+)\)s/g, (whole, key) => String(values[key]));
  const form = document.getElementById("upload-form");
  const box = document.getElementById("upload-progress");
  if (!form || !box || !window.XMLHttpRequest || !window.FormData) return;
  const bar = box.querySelector(".bar");
  const label = document.getElementById("upload-progress-label");
  const mb = (bytes) => (bytes / 1e6).toFixed(bytes < 1e7 ? 1 : 0);

  function show(loaded, total) {
    const share = total ? loaded / total : 0;
    bar.style.width = `${(100 * share).toFixed(1)}%`;
    box.setAttribute("aria-valuenow", String(Math.round(100 * share)));
    label.textContent = share < 1 ? fmt(gettext("Uploading: %(loaded)s of %(total)s MB (%(percent)s)"), { loaded: mb(loaded), total: mb(total), percent: `${Math.round(100 * share)}%` })
      : gettext("Uploaded; checking the files…");
  }

  function replacePage(xhr) {
    document.open();
    document.write(xhr.responseText);
    document.close();
    if (xhr.responseURL) history.replaceState(null, "", xhr.responseURL);
  }

  form.addEventListener("submit", (event) => {
    if (!form.reportValidity()) return;
    event.preventDefault();
    const xhr = new XMLHttpRequest();
    xhr.open("POST", form.action || window.location.href);
    xhr.upload.addEventListener("progress", (e) => show(e.loaded, e.lengthComputable ? e.total : 0));
    xhr.addEventListener("load", () => replacePage(xhr));
    xhr.addEventListener("error", () => {
      label.textContent = gettext("The upload failed (the connection broke). Try again.");
      form.querySelector("button[type=submit]").disabled = false;
    });
    form.querySelector("button[type=submit]").disabled = true;
    box.hidden = false;
    show(0, 1);
    xhr.send(new FormData(form));
  });
})();

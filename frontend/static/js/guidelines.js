// The guidelines gate, in place (tasks.guidelines): a worker who has not confirmed a task's current guidelines
// reads them and confirms on the page they are on, through the API, so what they typed, the label they chose and
// the context they were shown all stay. Used by create.js and validate.js.
//
//   const gate = window.dynabench.guidelines;
//   gate.panel(acknowledgeUrl, onConfirmed)      // the panel's "I have read…" form confirms without a reload
//   gate.pending()                               // the version the panel asks for, or null
//   gate.refusal(element, data, onConfirmed)     // a 409 "guidelines" answer: its sentence with a link, and a button
(function (root) {
  "use strict";
  const { call, errorText } = root.dynabench.api;
  const $ = (id) => document.getElementById(id);
  const gettext = root.gettext || ((text) => text);  // the /jsi18n/ catalogue (base.html)
  const fmt = (text, values) => text.replace(/%\((\w+)\)s/g, (whole, key) => String(values[key]));

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    Object.entries(attrs || {}).forEach(([k, v]) => (k === "class" ? (node.className = v) : node.setAttribute(k, v)));
    children.forEach((c) => node.append(c));
    return node;
  }

  function pending() {
    const form = $("guidelines-ack-form");
    return form ? parseInt(form.querySelector("input[name=version]").value, 10) : null;
  }

  // The panel after a confirmation: no longer marked, the form replaced by a thank-you, the text folded away.
  function markRead(version) {
    const panel = $("guidelines-panel");
    const form = $("guidelines-ack-form");
    if (panel) panel.classList.remove("bad");
    if (form) form.replaceWith(el("p", { class: "lead", id: "guidelines-done", role: "status" },
      fmt(gettext("Thank you: you have read version %(version)s of the guidelines."), { version })));
    const details = $("guidelines");
    if (!details) return;
    details.open = false;
    const summary = details.querySelector("summary");
    // the panel's own version (a refusal may confirm a newer one than the panel shows)
    if (summary && form) summary.textContent = fmt(gettext("Guidelines (version %(version)s)"), { version });
  }

  async function confirm(url, version, status) {
    let result;
    try {
      result = await call("POST", url, { version });
    } catch (error) {
      result = null;
    }
    if (result && result.ok) { markRead(version); return true; }
    if (status) status.textContent = errorText(result && result.data, gettext("The network failed; press the button again."));
    return false;
  }

  // The panel's form (tasks/_guidelines_panel.html) posts to a page and reloads it; with this script it confirms
  // through the API instead and the page stays as it is.
  function panel(url, onConfirmed) {
    const form = $("guidelines-ack-form");
    if (!form || !url) return;
    const status = el("p", { class: "error", role: "alert", id: "guidelines-ack-error" });
    form.append(status);
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const button = form.querySelector("button[type=submit]");
      button.disabled = true;
      const version = pending();
      if (await confirm(url, version, status)) onConfirmed(version);
      else button.disabled = false;
    });
  }

  // A refusal's sentence ends with the guidelines' address: the sentence is shown without it, then a link to them
  // (a new tab, so this page and what is typed on it stay), then a button that confirms in place.
  function refusal(element, data, onConfirmed) {
    const detail = errorText(data);
    const url = data.guidelines_url;
    const sentence = url && detail.endsWith(`: ${url}`) ? `${detail.slice(0, -url.length - 2)}.` : detail;
    const link = el("a", { href: url, target: "_blank", rel: "noopener", id: "guidelines-link" },
      fmt(gettext("Open the guidelines (version %(version)s)"), { version: data.guidelines_version }));
    const button = el("button", { type: "button", class: "secondary", id: "guidelines-confirm" },
      fmt(gettext("I have read the guidelines (version %(version)s)"), { version: data.guidelines_version }));
    const status = el("span", { class: "error" });
    button.addEventListener("click", async () => {
      button.disabled = true;
      if (await confirm(data.acknowledge_url, data.guidelines_version, status)) {
        element.replaceChildren();
        onConfirmed(data.guidelines_version);
      } else button.disabled = false;
    });
    element.replaceChildren(el("span", {}, sentence), " ", link, " ", button, " ", status);
  }

  root.dynabench = root.dynabench || {};
  root.dynabench.guidelines = { panel, pending, refusal };
})(window);

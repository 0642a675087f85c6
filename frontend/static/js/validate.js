// The validation page: one key per verdict (1 correct, 2 incorrect, 3 flag); each vote saves and loads the next item.
// API calls go through api.js; the queue's address comes from the page (data-next-url), each vote's from its item.
(() => {
  "use strict";
  const gettext = window.gettext || ((text) => text);  // the /jsi18n/ catalogue (base.html)
  const fmt = (text, values) => text.replace(/%\((\w+)\)s/g, (whole, key) => String(values[key]));
  const app = document.getElementById("validate-app");
  if (!app) return;
  const api = window.dynabench.api;
  const $ = (id) => document.getElementById(id);
  const state = { item: null, mode: "idle", busy: false, done: 0 };
  const gate = window.dynabench.guidelines;

  function text(value) {
    if (value === null || value === undefined) return "—";
    return typeof value === "object" ? (value.text ?? JSON.stringify(value)) : String(value);
  }

  function field(name, value, cls) {
    const wrap = document.createElement("div");
    const head = document.createElement("h3");
    head.textContent = name.charAt(0).toUpperCase() + name.slice(1);
    const body = document.createElement("p");
    body.className = cls;
    body.textContent = text(value);
    wrap.append(head, body);
    return wrap;
  }

  function modelVerdict(model) {
    const predicted = model.prediction ? text(model.prediction.label ?? model.prediction) : "—";
    const fooled = model.fooled === true ? gettext("fooled") : model.fooled === false ? gettext("not fooled") : gettext("not scored");
    return `${predicted} (${fooled})`;
  }

  function show(item) {
    state.item = item;
    setMode("idle");
    $("item-id").textContent = `#${item.id}`;
    $("item-round").textContent = fmt(gettext("Round %(round)s"), { round: item.round });
    $("item-context").replaceChildren(...Object.entries(item.context).map(([k, v]) => field(k, v, "context-text")));
    $("item-input").replaceChildren(...Object.entries(item.input).map(([k, v]) => field(k, v, "")));
    $("writer-label").textContent = text(item.writer_label);
    $("model-verdict").textContent = modelVerdict(item.model);
    buildLabelChoices(item);
    $("status").hidden = true;
    $("item").hidden = false;
    $("vote-correct").focus();
  }

  function buildLabelChoices(item) {
    const choices = (item.labels || []).filter((l) => l !== item.writer_label);
    $("answer-row").hidden = Boolean(item.labels);
    $("label-choices").replaceChildren(...choices.map((label, i) => {
      const key = String.fromCharCode(97 + i);
      const button = document.createElement("button");
      button.type = "button";
      button.className = "secondary";
      button.dataset.label = label;
      button.dataset.key = key;
      button.innerHTML = `<kbd>${key}</kbd> `;
      button.append(label);
      button.addEventListener("click", () => vote("incorrect", label));
      return button;
    }));
  }

  function empty(body) {
    state.item = null;
    $("item").hidden = true;
    $("status").hidden = false;
    $("status").dataset.reason = body.reason || "";
    $("status").textContent = body.detail || gettext("Nothing to validate right now.");
  }

  async function next() {
    const { ok, data } = await api.post(app.dataset.nextUrl); // a POST: it leases the item
    if (!ok) return empty({ detail: api.errorText(data, gettext("Could not load the next example.")) });
    return data.item ? show(data.item) : empty(data);
  }

  // 2 and 3 open a panel below the buttons: it is brought into view whole (on a phone and on a desktop alike, the
  // buttons may sit at the bottom of the window) and its first choice, or its text box, gets the focus.
  function setMode(mode) {
    state.mode = mode;
    $("label-panel").hidden = mode !== "label";
    $("reason-panel").hidden = mode !== "reason";
    $("vote-error").textContent = "";
    if (mode === "idle" || !state.item) return;
    let target;
    if (mode === "reason") { $("reason-input").value = ""; target = $("reason-input"); }
    else if (!state.item.labels) { $("answer-input").value = ""; target = $("answer-input"); }
    else target = $("label-choices").querySelector("button");
    $(mode === "reason" ? "reason-panel" : "label-panel").scrollIntoView({ block: "nearest" });
    if (target) target.focus({ preventScroll: true });
  }

  function answerLabel(answer) {
    const passage = String(Object.values(state.item.context)[0] || "");
    return { text: answer, start: Math.max(passage.indexOf(answer.trim()), 0) };
  }

  async function vote(verdict, label, reason) {
    if (!state.item || state.busy) return;
    state.busy = true;
    const payload = { verdict };
    if (label !== undefined) payload.label = label;
    if (reason !== undefined) payload.reason = reason;
    try {
      const { ok, status, data } = await api.post(state.item.validate_url, payload);
      if (ok) {
        state.done += 1;
        $("done-count").textContent = String(state.done);
        await next();
      } else if (status === 409 && data && data.code === "guidelines") {
        // unread guidelines: confirmed here, in place; the example stays for the vote
        gate.refusal($("vote-error"), data, () => {
          $("vote-error").textContent = gettext("Thank you. Now cast your vote again.");
          $("vote-correct").focus();
        });
      } else if (status === 409) {
        await next(); // decided or held by others meanwhile: move on
      } else {
        api.showError($("vote-error"), data, fmt(gettext("Not saved (%(status)s)."), { status }));
      }
    } finally {
      state.busy = false;
    }
  }

  function onKey(event) {
    if (!state.item || event.ctrlKey || event.metaKey || event.altKey) return;
    const typing = event.target.matches("input, textarea");
    if (event.key === "Escape") { setMode("idle"); $("vote-correct").focus(); return; }
    if (typing) {
      if (event.key !== "Enter") return;
      event.preventDefault();
      const value = event.target.value.trim();
      if (!value) { $("vote-error").textContent = gettext("Type something first, or press Esc."); return; }
      if (state.mode === "reason") vote("flagged", undefined, value);
      else if (state.mode === "label") vote("incorrect", answerLabel(value));
      return;
    }
    if (state.mode === "label") {
      const choice = $("label-choices").querySelector(`[data-key="${event.key}"]`);
      if (choice) { event.preventDefault(); vote("incorrect", choice.dataset.label); }
      return;
    }
    const action = { 1: () => vote("correct"), 2: () => setMode("label"), 3: () => setMode("reason") }[event.key];
    if (action) { event.preventDefault(); action(); }
  }

  $("vote-correct").addEventListener("click", () => vote("correct"));
  $("vote-incorrect").addEventListener("click", () => setMode("label"));
  $("vote-flagged").addEventListener("click", () => setMode("reason"));
  document.addEventListener("keydown", onKey);
  gate.panel(app.dataset.guidelinesAcknowledgeUrl, () => { if (state.item) $("vote-correct").focus(); });
  rememberFold($("validator-guidance"), `guidance-folded:${app.dataset.nextUrl}`);
  next();

  // A validator who folded "How to judge" finds it folded on their next visit (this browser only).
  function rememberFold(details, key) {
    if (!details) return;
    try {
      if (localStorage.getItem(key) === "1") details.open = false;
      details.addEventListener("toggle", () => localStorage.setItem(key, details.open ? "0" : "1"));
    } catch (error) { /* storage off: it simply opens each time */ }
  }
})();

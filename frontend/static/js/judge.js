// The judge pages of a chat task (chat/judging_views.py). On the judge page: the next marked answer comes from the
// API's queue (data-next-url) with its conversation; keys 1/2/3 pick the verdict, the rating slider rates the
// answer, and saving posts the judgement to the failure's own address, then loads the next one. On the experts'
// page: each disputed answer's form posts the decision to its data-decision-url and says the outcome in place.
(() => {
  "use strict";
  const gettext = window.gettext || ((text) => text);  // the /jsi18n/ catalogue (base.html)
  const fmt = (text, values) => text.replace(/%\((\w+)\)s/g, (whole, key) => String(values[key]));
  const api = window.dynabench.api;
  const $ = (id) => document.getElementById(id);

  function bubble(cls, who, text) {
    const li = document.createElement("li");
    li.className = cls;
    const name = document.createElement("span");
    name.className = "who";
    name.textContent = who;
    li.append(name, document.createTextNode(text));
    return li;
  }

  function judgePage(app) {
    const gate = window.dynabench.guidelines;
    const state = { item: null, busy: false, done: 0 };
    const form = $("judge-form");

    function verdict() {
      const checked = form.querySelector("input[name=verdict]:checked");
      return checked ? checked.value : "";
    }

    function onVerdict() {
      const chosen = verdict();
      $("category-row").hidden = chosen !== "confirmed";
      $("reason-need").textContent = chosen === "unusable" ? gettext("(required: why can it not be judged?)") : gettext("(optional)");
      $("judge-error").textContent = "";
    }

    function show(item) {
      state.item = item;
      $("item-id").textContent = `#${item.id}`;
      $("item-round").textContent = fmt(gettext("Round %(round)s"), { round: item.round });
      $("item-judged").textContent = fmt(gettext("%(judged)s of %(quorum)s judgements"), { judged: item.judged, quorum: item.quorum });
      const log = [];
      for (const turn of item.conversation) {
        log.push(bubble("from-writer", gettext("Writer"), turn.user));
        if (turn.answer) log.push(bubble("from-model", turn.answer.model, turn.answer.text));
      }
      log.push(bubble("from-writer", gettext("Writer"), item.message));
      const marked = bubble("from-model marked-answer", `${item.answer.model} · marked as failing`, item.answer.text);
      marked.id = "marked-answer";
      log.push(marked);
      $("conversation").replaceChildren(...log);
      $("marked-category").textContent = item.marked.category_label;
      $("marked-reason").textContent = item.marked.reason;
      form.reset();
      $("category").value = item.marked.category;
      $("rating-value").textContent = $("rating").value;
      onVerdict();
      $("status").hidden = true;
      $("item").hidden = false;
    }

    function empty(body) {
      state.item = null;
      $("item").hidden = true;
      $("status").hidden = false;
      $("status").dataset.reason = body.reason || "";
      $("status").textContent = body.detail || gettext("Nothing to judge right now.");
    }

    async function next() {
      const { ok, status, data } = await api.get(app.dataset.nextUrl);
      if (status === 409 && data && data.code === "guidelines") {
        empty({ detail: "" });
        return gate.refusal($("status"), data, next); // read and confirm the guidelines, then the queue opens
      }
      if (!ok) return empty({ detail: api.errorText(data, gettext("Could not load the next marked answer.")) });
      return data.failure ? show(data.failure) : empty(data);
    }

    async function save(event) {
      event.preventDefault();
      if (!state.item || state.busy) return;
      const chosen = verdict();
      if (!chosen) { $("judge-error").textContent = gettext("Choose a verdict first (1, 2 or 3)."); return; }
      const payload = { verdict: chosen, rating: Number($("rating").value), reason: $("reason").value.trim() };
      if (chosen === "confirmed") payload.category = $("category").value;
      if (chosen === "unusable" && !payload.reason) {
        $("judge-error").textContent = gettext("Say why the answer cannot be judged.");
        $("reason").focus();
        return;
      }
      state.busy = true;
      $("save").disabled = true;
      try {
        const { ok, status, data } = await api.post(state.item.judge_url, payload);
        if (ok) {
          state.done += 1;
          $("done-count").textContent = String(state.done);
          await next();
        } else if (status === 409 && data && data.code === "guidelines") {
          gate.refusal($("judge-error"), data, () => { $("judge-error").textContent = gettext("Thank you. Now save again."); });
        } else if (status === 409) {
          await next(); // decided, or its quorum reached meanwhile: move on
        } else {
          api.showError($("judge-error"), data, fmt(gettext("Not saved (%(status)s)."), { status }));
        }
      } finally {
        state.busy = false;
        $("save").disabled = false;
      }
    }

    function onKey(event) {
      if (!state.item || event.ctrlKey || event.metaKey || event.altKey) return;
      if (event.target.matches("input[type=text], textarea, select")) return;
      const value = { 1: "confirmed", 2: "not_a_failure", 3: "unusable" }[event.key];
      if (!value) return;
      event.preventDefault();
      const input = $(`verdict-${value}`);
      input.checked = true;
      input.focus();
      onVerdict();
    }

    form.addEventListener("change", (event) => { if (event.target.name === "verdict") onVerdict(); });
    $("rating").addEventListener("input", () => { $("rating-value").textContent = $("rating").value; });
    form.addEventListener("submit", save);
    document.addEventListener("keydown", onKey);
    gate.panel(app.dataset.guidelinesAcknowledgeUrl, () => { if (!state.item) next(); });
    next();
  }

  function disputedPage(app) {
    for (const form of app.querySelectorAll("form.decision-form")) {
      const error = form.querySelector(".error");
      const category = form.elements.category;
      const sync = () => { category.disabled = form.elements.verdict.value !== "confirmed"; };
      form.elements.verdict.addEventListener("change", sync);
      sync();
      form.addEventListener("submit", async (event) => {
        event.preventDefault();
        const payload = { verdict: form.elements.verdict.value, rating: form.elements.rating.value,
                          reason: form.elements.reason.value.trim() };
        if (payload.verdict === "confirmed") payload.category = category.value;
        const { ok, status, data } = await api.post(form.dataset.decisionUrl, payload);
        if (!ok) return api.showError(error, data, fmt(gettext("Not saved (%(status)s)."), { status }));
        const done = document.createElement("p");
        done.className = "card good decided";
        const kind = data.failure.decided_category ? ` (${data.failure.decided_category})` : "";
        done.textContent = fmt(gettext("Decided: %(decision)s%(kind)s."), { decision: data.failure.consensus_label.toLowerCase(), kind });
        form.replaceWith(done);
      });
    }
  }

  const judge = $("judge-app");
  if (judge) judgePage(judge);
  const disputed = $("disputed-app");
  if (disputed) disputedPage(disputed);
})();

// The create page: write an example, see the verdict. Calls the same API as any client (through api.js);
// its addresses come from the page (cfg.urls) and from each example's `links`.
(function () {
  "use strict";
  const { call, showError: showErrorIn, errorText, pageData } = window.dynabench.api;
  const cfg = pageData("create-config");
  // The interface's strings in the page's language (the /jsi18n/ catalogue; base.html loads it before this script).
  const gettext = window.gettext || ((text) => text);
  const ngettext = window.ngettext || ((one, many, n) => (n === 1 ? one : many));
  const fmt = (text, values) => text.replace(/%\((\w+)\)s/g, (whole, key) => String(values[key]));
  // What people read for a label (the owner's translation; the stored label stays the label itself).
  const labelNames = pageData("label-names") || {};
  const labelName = (label) => (typeof label === "string" && labelNames[label]) || String(label);
  const $ = (id) => document.getElementById(id);
  const withQuery = (url, params) => {
    const query = new URLSearchParams(Object.entries(params).filter(([, v]) => v !== null && v !== undefined && v !== ""));
    return query.toString() ? `${url}${url.includes("?") ? "&" : "?"}${query}` : url;
  };
  const api = {
    next: (exclude) => withQuery(cfg.urls.next_context, { exclude }),
    submit: (sandbox) => withQuery(cfg.urls.submit, { sandbox: sandbox ? 1 : null }),
    stats: cfg.urls.my_stats,
    inspiration: cfg.urls.inspiration,
    suggestions: cfg.urls.suggestions,
  };
  const state = { contextId: null, answer: null, example: null, key: null, startedAt: Date.now(), poll: null, mapPoll: null,
    suggestion: null, choice: null, suggestPoll: null };
  state.contextId = parseInt($("context").dataset.contextId, 10) || null;

  function newKey() {
    if (window.crypto && crypto.randomUUID) return crypto.randomUUID();
    return `${Date.now()}-${Math.random().toString(36).slice(2)}`;
  }

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    Object.entries(attrs || {}).forEach(([k, v]) => (k === "class" ? (node.className = v) : node.setAttribute(k, v)));
    children.forEach((c) => node.append(c));
    return node;
  }

  const pct = (p) => `${(100 * p).toFixed(1)}%`;
  // "wait N seconds" of a 429: the server's Retry-After, else "a few"
  const tooMany = (text, result) => fmt(text, { seconds: result.retryAfter || gettext("a few") });

  // --- context ---------------------------------------------------------------------------------
  function passageEl() {
    return cfg.answer_is_span ? $(`context-${cfg.context_fields[0]}`) : null;
  }

  function showContext(context) {
    state.contextId = context ? context.id : null;
    $("context").dataset.contextId = state.contextId || "";
    cfg.context_fields.forEach((name) => {
      const node = $(`context-${name}`);
      if (node) node.textContent = context ? String(context.payload[name] ?? "") : "";
    });
    setAnswer(null);
    clearSuggestions();  // suggestions belong to the context they were written for
  }

  // Serving a context counts its use, so it is a POST (the page itself shows none until this answers).
  async function newContext() {
    const result = await call("POST", api.next(state.contextId));
    if (result.status === 200) showContext(result.data);
    else if (result.status === 204) showError({ detail: gettext("This task has no context to write about in the open round.") });
    else showError(result.data);
  }

  // --- QA answer: a highlighted (or typed) span of the passage ------------------------------------
  // A highlight says exactly where the answer is. A typed answer that occurs more than once in the passage
  // is ambiguous: the writer picks the occurrence they mean (never silently the first).
  function setAnswer(answer, fromInput, note) {
    state.answer = answer;
    if (!$("answer-input")) return;
    if (!fromInput) $("answer-input").value = answer ? answer.text : "";
    if (!fromInput) showOccurrences([]);
    $("answer-status").textContent = note !== undefined ? note : (answer ? gettext("Highlighted in the passage.") : "");
  }

  function occurrences(passage, text) {
    const found = [];
    for (let at = passage.indexOf(text); at >= 0; at = passage.indexOf(text, at + 1)) found.push(at);
    return found;
  }

  function snippet(passage, start, length) {
    const before = passage.slice(Math.max(0, start - 40), start);
    const after = passage.slice(start + length, start + length + 40);
    return [(start > 40 ? "…" : "") + before, passage.slice(start, start + length), after + (start + length + 40 < passage.length ? "…" : "")];
  }

  function showOccurrences(starts, text) {
    const box = $("answer-occurrences");
    if (!box) return;
    box.replaceChildren();
    box.hidden = starts.length < 2;
    if (starts.length < 2) return;
    const passage = passageEl().textContent;
    box.append(el("legend", {}, fmt(gettext("“%(text)s” appears %(count)s times in the passage. Which one do you mean?"),
      { text, count: starts.length })));
    starts.forEach((start, i) => {
      const [before, match, after] = snippet(passage, start, text.length);
      const input = el("input", { type: "radio", name: "answer-occurrence", value: String(start), id: `occurrence-${i + 1}` });
      input.addEventListener("change", () =>
        setAnswer({ text, start }, true, fmt(gettext("Occurrence %(n)s of %(count)s chosen."), { n: i + 1, count: starts.length })));
      box.append(el("label", { class: "occurrence", for: `occurrence-${i + 1}` }, input,
        el("span", {}, before, el("mark", {}, match), after)));
    });
  }

  function selectionInPassage() {
    const passage = passageEl();
    const selection = window.getSelection();
    if (!passage || !selection || selection.rangeCount === 0 || selection.isCollapsed) return null;
    const range = selection.getRangeAt(0);
    if (!passage.contains(range.startContainer) || !passage.contains(range.endContainer)) return null;
    const before = document.createRange();
    before.setStart(passage, 0);
    before.setEnd(range.startContainer, range.startOffset);
    const raw = range.toString();
    const lead = raw.length - raw.trimStart().length;
    const text = raw.trim();
    return text ? { text, start: before.toString().length + lead } : null;
  }

  function onPassageSelect() {
    const answer = selectionInPassage();
    if (answer) setAnswer(answer);
  }

  function onAnswerTyped() {
    const text = $("answer-input").value.trim();
    const starts = text ? occurrences(passageEl().textContent, text) : [];
    showOccurrences(starts, text);
    if (!text) setAnswer(null, true, "");
    else if (starts.length === 0) setAnswer(null, true, gettext("Not in the passage: type it exactly as it appears there, or highlight it."));
    else if (starts.length === 1) setAnswer({ text, start: starts[0] }, true, gettext("Found in the passage."));
    else setAnswer(null, true, gettext("Choose which occurrence you mean (below)."));
  }

  // --- the character counter: the limit is shown before it is reached, never applied silently -------
  function countChars(node) {
    const count = $(`count-${node.dataset.inputField}`);
    if (!count) return;
    const length = node.value.length;
    const over = length - cfg.max_input_chars;
    count.textContent = over > 0
      ? fmt(gettext("%(length)s / %(limit)s: %(over)s too many"), { length, limit: cfg.max_input_chars, over })
      : `${length} / ${cfg.max_input_chars}`;
    count.classList.toggle("near", over <= 0 && length >= 0.9 * cfg.max_input_chars);
    count.classList.toggle("over", over > 0);
  }

  function tooLong() {
    return Array.from(document.querySelectorAll("[data-input-field]")).find((n) => n.value.trim().length > cfg.max_input_chars);
  }

  // --- submission --------------------------------------------------------------------------------
  function readForm() {
    const input = {};
    document.querySelectorAll("[data-input-field]").forEach((node) => (input[node.dataset.inputField] = node.value));
    let target;
    if (cfg.answer_is_span) target = state.answer;
    else {
      const checked = document.querySelector("input[name=target]:checked");
      target = checked ? checked.value : null;
    }
    return { input, target };
  }

  function showError(data, fallback) {
    showErrorIn($("form-error"), data, fallback);
  }

  async function submit(event) {
    if (event) event.preventDefault();
    $("form-error").textContent = "";
    if (!$("guidelines-gate").hidden) return showError(null, gettext("Read the guidelines above and confirm them first."));
    const { input, target } = readForm();
    const long = tooLong();
    if (long) {
      showError(null, fmt(gettext("%(field)s: %(length)s characters; the limit is %(limit)s."),
        { field: long.dataset.inputField, length: long.value.trim().length, limit: cfg.max_input_chars }));
      long.focus();
      return;
    }
    if (target === null || target === undefined) {
      const typed = cfg.answer_is_span && $("answer-input").value.trim();
      showError(null, !cfg.answer_is_span ? gettext("Choose the label you intend.")
        : (typed ? gettext("Answer: choose which occurrence in the passage you mean, or highlight it.")
          : gettext("Answer: highlight it in the passage, or type it.")));
      return;
    }
    const sandbox = $("sandbox").checked;
    state.key = state.key || newKey();
    const body = { context_id: state.contextId, input, target, round: cfg.round, time_spent_ms: Date.now() - state.startedAt };
    if (!sandbox) body.idempotency_key = state.key;
    if (!sandbox && state.suggestion) {  // provenance: the server compares the text with what was suggested
      body.suggestion_id = state.suggestion.id;
      if (state.choice !== null) body.suggestion_choice = state.choice;
    }
    setScoring(true);
    let result;
    try {
      result = await call("POST", api.submit(sandbox), body);
    } catch (error) {
      setScoring(false);
      $("verdict").hidden = true;
      showError(null, gettext("The network failed; submit again (your example will not be saved twice)."));
      return;
    }
    setScoring(false);
    if (!result.ok) $("verdict").hidden = true;  // the placeholder goes; the reason shows by the form
    if (result.status === 429) return showError(null, tooMany(gettext("Too many submissions; wait %(seconds)s seconds."), result));
    if (result.status === 409 && result.data && result.data.code === "guidelines") return guidelinesRefusal(result.data);
    if (!result.ok) return showError(result.data);
    state.key = null;
    if (sandbox) showVerdict(result.data, true);
    else { state.example = result.data; showVerdict(result.data, false); clearInputs(); refreshFigures(); }
  }

  // --- the guidelines gate (tasks.guidelines): read and confirmed before writing, on this page -------------------
  // Confirming goes through the API and never reloads: the typed text, the chosen label and the context stay. A
  // writer meets unread guidelines before writing (the form waits for them); a version published while they write
  // refuses the submission, with a link to the new version and a button that confirms it here.
  const gate = window.dynabench.guidelines;

  let gated = [];  // what the gate disabled, and only that, is enabled again
  function setGate(closed) {
    if (closed) {
      gated = Array.from(document.querySelectorAll("#create-form textarea, #create-form input, #create-form button"))
        .filter((node) => !node.disabled);
      gated.forEach((node) => (node.disabled = true));
    } else gated.splice(0).forEach((node) => (node.disabled = false));
    $("guidelines-gate").hidden = !closed;
  }

  function guidelinesRefusal(data) {
    gate.refusal($("form-error"), data, () => {
      $("form-error").textContent = gettext("Thank you. Your example, its label and the context are as you left them: submit it when ready.");
      $("submit").focus();
    });
  }

  // While the models score: the button says so, and the verdict card shows a spinner until the answer.
  function setScoring(on) {
    $("submit").disabled = on;
    $("submit").setAttribute("aria-busy", on ? "true" : "false");
    $("submit-label").textContent = on ? (cfg.model_in_loop === false ? gettext("Saving…") : gettext("Scoring…")) : gettext("Submit");
    $("submit-spinner").hidden = !on;
    if (!on) return;
    $("verdict").hidden = false;
    $("verdict-sandbox").hidden = true;
    $("verdict-state").className = "verdict-state pending";
    $("verdict-state").textContent = cfg.model_in_loop === false ? gettext("Saving your example…") : gettext("Scoring your example…");
    $("verdict-body").hidden = true;
    $("verdict-actions").hidden = true;
    markModelAnswer(null);
    $("verdict").scrollIntoView({ block: "nearest" });
  }

  // --- verdict -----------------------------------------------------------------------------------
  // A QA answer's score is its probability among all valid spans of the passage (mean over the models).
  function predictionText(prediction) {
    if (!prediction) return "—";
    if ("label" in prediction) {
      const p = prediction.probs && prediction.probs[prediction.label];
      return p === undefined ? labelName(prediction.label) : `${labelName(prediction.label)} (${pct(p)})`;
    }
    return `“${prediction.text}”` + (prediction.score !== undefined
      ? " " + fmt(gettext("(confidence %(value)s)"), { value: pct(Number(prediction.score)) }) : "");
  }

  // The ensemble's QA answer, marked where it stands in the passage (the passage text itself is unchanged).
  function markModelAnswer(prediction) {
    const passage = passageEl();
    if (!passage) return;
    const text = passage.textContent;
    passage.textContent = text;
    if (!prediction || prediction.start === undefined || prediction.end === undefined) return;
    const start = Number(prediction.start), end = Number(prediction.end);
    if (!(start >= 0 && end > start && end <= text.length)) return;
    const mark = el("mark", { class: "model-answer", id: "model-answer",
      title: gettext("The models' answer") + (prediction.score !== undefined
        ? " " + fmt(gettext("(confidence %(value)s)"), { value: pct(Number(prediction.score)) }) : "") },
    text.slice(start, end));
    passage.replaceChildren(text.slice(0, start), mark, text.slice(end));
  }

  function renderEnsemble(prediction) {
    const box = $("ensemble");
    box.replaceChildren();
    if (prediction && prediction.probs) {
      box.append(el("p", { class: "ensemble-label", id: "ensemble-label" }, labelName(prediction.label)));
      Object.entries(prediction.probs).sort((a, b) => b[1] - a[1]).forEach(([label, p]) => {
        const bar = el("span", { class: "bar" });
        bar.style.width = pct(p);
        box.append(el("div", { class: "prob", "data-label": label }, el("span", { class: "prob-label" }, labelName(label)),
          el("span", { class: "bar-track" }, bar), el("span", { class: "prob-value" }, pct(p))));
      });
    } else box.append(el("p", { class: "ensemble-label", id: "ensemble-label" }, predictionText(prediction)));
  }

  function renderModels(models) {
    const body = $("models").querySelector("tbody");
    body.replaceChildren();
    (models || []).forEach((m) => {
      if (m.opponent) { body.append(opponentRow(m)); return; }
      body.append(el("tr", { class: "model-row" },
        el("td", {}, `${m.name} (v${m.model_version})`), el("td", {}, predictionText(m.prediction))));
    });
  }

  // A language model opponent: its answer and its own "fooled" flag, then what it is worth (its held-out accuracy
  // against always answering the commonest label, from the server) and that it decides nothing: the verdict is the
  // ensemble's. One that did not answer in time is left out of this verdict, and the row says why.
  function opponentRow(m) {
    let answer = predictionText(m.prediction);
    if (m.left_out) answer = fmt(gettext("left out of this verdict: %(reason)s"), { reason: m.left_out });
    else if (m.fooled !== undefined) answer += m.fooled ? gettext(" — it was fooled too") : gettext(" — it was not fooled");
    const notes = el("p", { class: "muted opponent-notes" });
    if (m.held_out) notes.append(el("span", { class: "opponent-held-out" }, m.held_out), " ");
    notes.append(el("strong", { class: "opponent-decides" },
      m.note || gettext("It never changes the verdict: the ensemble's decides; this row is shown for comparison.")));
    return el("tr", { class: "model-row opponent" },
      el("td", {}, `${m.name} (v${m.model_version})`),  // the stylesheet adds "· LLM opponent"
      el("td", {}, el("span", { class: "opponent-answer" }, answer), notes));
  }

  // Green: evidence for the models' answer (removing the word lowers their confidence); red: evidence against.
  function heatColor(score) {
    const a = Math.min(Math.abs(score), 1) * 0.75;
    return score >= 0 ? `rgba(44, 160, 44, ${a})` : `rgba(214, 39, 40, ${a})`;
  }

  // The explanation methods' labels come with the page's config (zoo.explain_methods, the one registry).
  const METHOD_NAMES = Object.fromEntries((cfg.explanation_methods || []).map((m) => [m.name, m.label]));

  // The map follows the verdict (a job of its own): "pending" shows a note and polls, "unavailable" says why
  // and offers to ask again.
  function renderMapState(example) {
    const box = $("heatmap");
    box.replaceChildren();
    $("heatmap-legend").textContent = "";
    if (example.explanation_state === "pending") {
      box.append(el("p", { class: "lead map-pending", id: "map-pending" }, gettext("Working out which words mattered to the models…")));
      scheduleMapPoll(example.id, 700);
      return;
    }
    box.append(el("p", { class: "lead", id: "map-unavailable" }, example.explanation_error
      ? fmt(gettext("No word map: %(reason)s"), { reason: example.explanation_error }) : gettext("No word map for this verdict.")));
    if (example.links && example.links.word_map) {
      const again = el("button", { type: "button", class: "secondary", id: "map-again" }, gettext("Ask for the word map again"));
      again.addEventListener("click", async () => {
        again.disabled = true;
        const result = await call("POST", example.links.word_map).catch(() => null);
        if (result && result.ok) { state.example = result.data; showMap(result.data); } else again.disabled = false;
      });
      box.append(again);
    }
  }

  function showMap(example) {
    if (example.explanation && example.explanation.words) renderHeatmap(example.explanation, example.ensemble_prediction);
    else if (example.explanation_state === "pending" || example.explanation_state === "unavailable") renderMapState(example);
    else renderHeatmap(example.explanation, example.ensemble_prediction);
  }

  function scheduleMapPoll(id, delay) {
    clearTimeout(state.mapPoll);
    state.mapPoll = setTimeout(async () => {
      if (!state.example || state.example.id !== id) return;
      const result = await call("POST", state.example.links.score).catch(() => null);
      if (!state.example || state.example.id !== id) return;
      if (result && result.ok && result.data.explanation_state !== "pending") {
        state.example = result.data;
        showMap(result.data);
      } else scheduleMapPoll(id, Math.min(delay * 1.5, 5000));
    }, delay);
  }

  function renderHeatmap(explanation, prediction) {
    const box = $("heatmap");
    box.replaceChildren();
    if (!explanation || !explanation.words || !explanation.words.length) {
      $("heatmap-legend").textContent = "";
      box.append(el("p", { class: "lead" }, gettext("No explanation for this verdict.")));
      return;
    }
    // The legend comes with the explanation (it names the answer, the method and the number of models).
    const answer = prediction && "label" in prediction ? `“${labelName(prediction.label)}”` : gettext("the answer");
    $("heatmap-legend").textContent = explanation.legend
      || fmt(gettext("Green words speak for %(answer)s, red words against it (method: %(method)s)."),
        { answer, method: METHOD_NAMES[explanation.method] || explanation.method });
    let segment = explanation.words[0].segment ?? 0;
    explanation.words.forEach((w) => {
      if ((w.segment ?? 0) !== segment) { segment = w.segment; box.append(el("span", { class: "hm-sep" }, "‖")); }
      const score = Number(w.score);
      const span = el("span", { class: "hm-word", title: `${w.word}: ${score >= 0 ? "+" : ""}${score.toFixed(2)}`, "data-score": w.score }, w.word);
      span.style.backgroundColor = heatColor(score);
      box.append(span, " ");
    });
    const method = METHOD_NAMES[explanation.method] || explanation.method;
    const line = explanation.members
      ? fmt(ngettext("Method: %(method)s over %(count)s model.", "Method: %(method)s over %(count)s models.", explanation.members),
        { method, count: explanation.members })
      : fmt(gettext("Method: %(method)s."), { method });
    box.append(el("p", { class: "lead hm-method", id: "heatmap-method" }, `${line} `,
      el("span", { class: "hm-key hm-key-for" }, gettext("for")), " ",
      el("span", { class: "hm-key hm-key-against" }, gettext("against"))));
  }

  function showVerdict(example, sandbox) {
    $("verdict").hidden = false;
    $("verdict-sandbox").hidden = !sandbox;
    ["retract", "flag"].forEach((id) => ($(id).hidden = sandbox));
    $("verdict-actions").hidden = false;
    // "Why was the model wrong?" only makes sense once it was: offered on a stored, fooling example.
    $("explain").hidden = sandbox || example.scoring_state !== "scored" || !example.fooled;
    $("flag-form").hidden = $("explain-form").hidden = true;
    $("action-status").textContent = "";
    $("retract").disabled = !!example.retracted;
    const stateText = $("verdict-state");
    const pending = !sandbox && example.scoring_state === "pending";
    stateText.className = "verdict-state";
    if (example.verdict_hidden) {
      // A study arm without the model in the loop (standard collection): saved, scored later, never shown here.
      stateText.textContent = gettext("Saved — thank you. Your example is stored; write the next one.");
      $("explain").hidden = true;
      $("verdict-body").hidden = true;
    } else if (pending) {
      // Broker down when it was saved: the example is kept and queued again by itself once the queue is back.
      stateText.textContent = example.scoring_delayed
        ? gettext("Saved — scoring delayed: the job queue is unreachable; it is scored automatically when it is back.")
        : gettext("Saved — scoring…");
      stateText.classList.add("pending");
      $("verdict-body").hidden = true;
      schedulePoll(example.id, 500);
    } else if (!sandbox && example.scoring_state === "failed") {
      stateText.textContent = gettext("Saved — scoring failed after every try; the example is kept, and the task's owners see it and can ask for its verdict again.");
      $("verdict-body").hidden = true;
    } else {
      stateText.textContent = example.fooled ? gettext("You fooled the model!") : gettext("The model was not fooled.");
      stateText.classList.add(example.fooled ? "fooled" : "not-fooled");
      renderEnsemble(example.ensemble_prediction);
      renderModels(example.model_predictions);
      if (sandbox) renderHeatmap(example.explanation, example.ensemble_prediction);
      else showMap(example);
      if (cfg.answer_is_span) markModelAnswer(example.ensemble_prediction);
      $("verdict-body").hidden = false;
    }
    $("verdict").scrollIntoView({ block: "nearest" });
  }

  function schedulePoll(id, delay) {
    clearTimeout(state.poll);
    // The poll is a POST to the example's `score` link: it may re-queue a verdict whose retry is due.
    const url = state.example.links.score;
    state.poll = setTimeout(async () => {
      const result = await call("POST", url).catch(() => null);
      if (!state.example || state.example.id !== id) return;
      if (result && result.ok && result.data.scoring_state !== "pending") {
        state.example = result.data;
        showVerdict(result.data, false);
        refreshFigures();
      } else schedulePoll(id, Math.min(delay * 1.5, 5000));
    }, delay);
  }

  // --- the writer's actions ----------------------------------------------------------------------
  async function act(action, body, done) {
    if (!state.example) return;
    const result = await call("POST", state.example.links[action], body);
    if (!result.ok) { showErrorIn($("action-status"), result.data, gettext("That did not work.")); return; }
    state.example = result.data;
    $("action-status").textContent = done;
    refreshFigures();
  }

  async function retract() {
    await act("retract", undefined, gettext("Retracted — this example no longer counts."));
    if (state.example && state.example.retracted) $("retract").disabled = true;
  }

  function toggle(formId, focusId) {
    const form = $(formId);
    form.hidden = !form.hidden;
    if (!form.hidden) $(focusId).focus();
  }

  // A stored example leaves the box empty: submitting the same text again would only be refused as a duplicate.
  function clearInputs() {
    document.querySelectorAll("[data-input-field]").forEach((node) => { node.value = ""; countChars(node); });
    setAnswer(null);
    state.startedAt = Date.now();
    clearSuggestions();
  }

  // --- the writing assistant ---------------------------------------------------------------------
  // The writer asks; a job writes the suggestions and scores each with the models in the loop; the page polls.
  function clearSuggestions() {
    clearTimeout(state.suggestPoll);
    state.suggestion = null;
    state.choice = null;
    if (!$("suggestions")) return;
    $("suggestions").replaceChildren();
    $("suggestions").hidden = true;
    $("suggest-status").textContent = "";
  }

  function setSuggesting(on) {
    $("suggest").disabled = on;
    $("suggest").setAttribute("aria-busy", on ? "true" : "false");
    $("suggest-spinner").hidden = !on;
    $("suggest-label").textContent = on ? gettext("Writing suggestions…") : gettext("Suggest examples");
  }

  // What the models said against the label asked for. The text's true label is unchecked (a small model often
  // writes another one), so a disagreement is never shown as a success: it fools the models only if it has that label.
  function verdictLine(candidate, asked) {
    const line = el("p", { class: "suggestion-verdict" }, fmt(gettext("Asked for %(label)s · "), { label: asked }));
    const disagree = candidate.models_disagree;
    if (disagree === null || disagree === undefined) {
      line.dataset.verdict = "none";
      line.append(el("span", { class: "tag warn" }, gettext("no verdict")),
        ` — ${candidate.verdict_error || gettext("the models did not score it")}.`);
      return line;
    }
    const said = candidate.ensemble_prediction ? predictionText(candidate.ensemble_prediction) : gettext("another label");
    line.dataset.verdict = disagree ? "disagree" : "agree";
    line.append(el("span", { class: disagree ? "tag warn" : "tag" }, fmt(gettext("the models say %(label)s"), { label: said })), disagree
      ? fmt(gettext(" — it fools them only if a reader agrees it is %(label)s."), { label: asked })
      : fmt(gettext(" — they get it right if it is %(label)s."), { label: asked }));
    return line;
  }

  function useSuggestion(index) {
    const field = document.querySelector("[data-input-field]");
    field.value = state.suggestion.candidates[index].text;
    countChars(field);
    state.choice = index;
    document.querySelectorAll(".suggestion").forEach((node, i) => node.classList.toggle("chosen", i === index));
    field.focus();
  }

  function showSuggestions(suggestion) {
    state.suggestion = suggestion;
    const list = $("suggestions");
    list.replaceChildren();
    if (suggestion.state === "failed") {
      $("suggest-status").textContent = suggestion.error;
      list.hidden = true;
      return;
    }
    const asked = typeof suggestion.target === "string" ? labelName(suggestion.target) : JSON.stringify(suggestion.target);
    suggestion.candidates.forEach((c, i) => {
      const take = el("button", { type: "button", class: "secondary", "data-suggestion": String(i) }, gettext("Use"));
      take.addEventListener("click", () => useSuggestion(i));
      list.append(el("li", { class: "suggestion", "data-models-disagree": String(c.models_disagree) },
        el("div", { class: "suggestion-text" }, el("p", { class: "suggestion-words", dir: "auto" }, c.text), verdictLine(c, asked)), take));
    });
    list.hidden = false;
    const scored = suggestion.candidates.filter((c) => c.models_disagree !== null && c.models_disagree !== undefined);
    const disagree = scored.filter((c) => c.models_disagree).length;
    $("suggest-status").textContent =
      fmt(gettext("%(count)s suggestion(s) from %(model)s, asked for %(label)s"),
        { count: suggestion.candidates.length, model: suggestion.model, label: asked }) +
      (scored.length ? fmt(gettext("; the models say another label for %(disagree)s of %(scored)s"),
        { disagree, scored: scored.length }) : "") +
      gettext(". A small model often writes another label than the one asked for: check each, then take one and edit it, or write your own.");
  }

  // A suggestion takes about a second on a quiet server: the page asks soon and often (a cheap read), so the
  // writer does not wait on the poll (it waited up to 2 s between polls before issue 39), and stops after a while.
  const SUGGEST_POLL_FIRST_MS = 250, SUGGEST_POLL_EVERY_MS = 400, SUGGEST_GIVE_UP_MS = 120000;

  async function pollSuggestion(url, askedAt) {
    const result = await call("GET", url).catch(() => null);
    if (!state.suggestion || state.suggestion.link !== url) return;  // cleared, or another request since
    if (result && result.ok && result.data.state !== "pending") { setSuggesting(false); showSuggestions(result.data); return; }
    if (result && !result.ok && result.status !== 503) {
      setSuggesting(false); $("suggest-status").textContent = errorText(result.data, gettext("The assistant is unavailable.")); return;
    }
    if (Date.now() - askedAt > SUGGEST_GIVE_UP_MS) {
      setSuggesting(false);
      $("suggest-status").textContent = gettext("The writing assistant did not answer in time. Ask again, or write your own example.");
      return;
    }
    state.suggestPoll = setTimeout(() => pollSuggestion(url, askedAt), SUGGEST_POLL_EVERY_MS);
  }

  async function suggest() {
    const { target } = readForm();
    if (target === null || target === undefined) { $("suggest-status").textContent = gettext("Choose the label you intend first."); return; }
    clearSuggestions();
    setSuggesting(true);
    const result = await call("POST", api.suggestions, { context_id: state.contextId, target, round: cfg.round }).catch(() => null);
    if (!result || !result.ok) {
      setSuggesting(false);
      $("suggest-status").textContent = result && result.status === 429
        ? tooMany(gettext("Too many requests; wait %(seconds)s seconds."), result)
        : errorText(result && result.data, gettext("The assistant is unavailable right now; write your own example."));
      return;
    }
    state.suggestion = result.data;
    const askedAt = Date.now();
    state.suggestPoll = setTimeout(() => pollSuggestion(result.data.link, askedAt), SUGGEST_POLL_FIRST_MS);
  }

  function tryAgain() {
    clearTimeout(state.poll);
    clearTimeout(state.mapPoll);
    state.example = null;
    $("verdict").hidden = true;
    clearInputs();
    const first = document.querySelector("[data-input-field]");
    if (first) first.focus();
  }

  // --- figures and inspiration -------------------------------------------------------------------
  async function refreshFigures() {
    const result = await call("GET", api.stats).catch(() => null);
    if (!result || !result.ok) return;
    ["collected", "fooled", "verified_fooled", "retracted"].forEach((k) => ($(`my-${k}`).textContent = result.data[k] === null ? "—" : result.data[k]));
    $("my-mer").textContent = result.data.mer === null ? "—" : pct(result.data.mer);
  }

  function inspirationItem(row) {
    const context = Object.values(row.context || {}).join(" ");
    const input = Object.values(row.input || {}).join(" / ");
    const target = typeof row.target === "object" && row.target ? row.target.text : row.target;
    const item = el("li", {});
    if (context) item.append(el("span", { class: "lead" }, context.slice(0, 160)), el("br"));
    item.append(el("q", {}, input), " → ", el("strong", {}, labelName(target)));
    return item;
  }

  async function inspiration() {
    const box = $("inspiration");
    const button = $("inspiration-button");
    if (!box.hidden) { box.hidden = true; button.setAttribute("aria-expanded", "false"); return; }
    const result = await call("GET", api.inspiration);
    box.replaceChildren();
    if (!result.ok) box.append(el("p", { class: "error" }, errorText(result.data, gettext("Unavailable."))));
    else {
      const sections = [[gettext("Examples that fooled the model (verified)"), result.data.fooling_examples],
        [gettext("Hard examples for this round"), result.data.hard_examples]];
      sections.forEach(([title, rows]) => {
        box.append(el("h3", {}, title));
        if (!rows.length) box.append(el("p", { class: "lead" }, gettext("None yet.")));
        else box.append(el("ul", { class: "inspiration-list" }, ...rows.map(inspirationItem)));
      });
    }
    box.hidden = false;
    button.setAttribute("aria-expanded", "true");
  }

  // --- keyboard ----------------------------------------------------------------------------------
  function onKey(event) {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) { event.preventDefault(); submit(); return; }
    if (!event.altKey) return;
    if (event.key === "n" || event.key === "N") { event.preventDefault(); newContext(); return; }
    const index = parseInt(event.key, 10);
    const radios = document.querySelectorAll("input[name=target]");
    if (index >= 1 && index <= radios.length) { event.preventDefault(); radios[index - 1].checked = true; radios[index - 1].focus(); }
  }

  if (cfg.model_in_loop === false) {
    // A study arm without the model in the loop: no sandbox verdicts, no fooling figures (study.arms).
    $("sandbox").closest("p").hidden = true;
    ["fooled", "verified_fooled", "mer"].forEach((k) => { const dd = $(`my-${k}`); dd.hidden = true; dd.previousElementSibling.hidden = true; });
  }
  $("create-form").addEventListener("submit", submit);
  $("new-context").addEventListener("click", newContext);
  $("retract").addEventListener("click", retract);
  $("flag").addEventListener("click", () => toggle("flag-form", "flag-reason"));
  $("explain").addEventListener("click", () => toggle("explain-form", "writer-explanation"));
  $("flag-save").addEventListener("click", () => act("flag", { reason: $("flag-reason").value }, gettext("Flagged — thank you.")));
  $("explain-save").addEventListener("click", () =>
    act("explanation", { writer_explanation: $("writer-explanation").value }, gettext("Explanation saved.")));
  $("try-again").addEventListener("click", tryAgain);
  $("inspiration-button").addEventListener("click", inspiration);
  if ($("suggest")) $("suggest").addEventListener("click", suggest);
  document.addEventListener("keydown", onKey);
  document.querySelectorAll("[data-input-field]").forEach((node) => {
    node.addEventListener("input", () => countChars(node));
    countChars(node);
  });
  const first = document.querySelector("[data-input-field]");
  if (gate.pending() !== null) {
    setGate(true);
    gate.panel(cfg.urls.guidelines_acknowledge, () => { setGate(false); if (first) first.focus(); });
  } else if (first) first.focus();  // ready to type
  const passage = passageEl();
  if (passage) {
    passage.addEventListener("mouseup", onPassageSelect);
    passage.addEventListener("keyup", onPassageSelect);
    $("answer-input").addEventListener("input", onAnswerTyped);
  }
  if (cfg.context_fields.length && cfg.round !== null && !state.contextId) newContext();
  window.dynabenchCreate = { state, newContext, submit };
})();

// The chat pages (chat/views.py, docs/chat/pages.md): the writer's conversations (start one) and one conversation
// (send a message, see each model's answer arrive, rate it or choose the better one, mark it as failing, try a
// failed one again, finish). Everything goes through the chat API (chat/api.py) with api.js; every address comes
// from the page (json_script "chat-config" or "chat-list-config"), a message's with "{id}" for its id.
(function () {
  "use strict";
  const gettext = window.gettext || ((text) => text);  // the /jsi18n/ catalogue (base.html)
  const fmt = (text, values) => text.replace(/%\((\w+)\)s/g, (whole, key) => String(values[key]));
  const { call, errorText, pageData } = window.dynabench.api;
  const gate = window.dynabench.guidelines;
  const $ = (id) => document.getElementById(id);

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    Object.entries(attrs || {}).forEach(([k, v]) => {
      if (v === false || v === null || v === undefined) return;
      if (k === "class") node.className = v;
      else if (k === "text") node.textContent = v;
      else node.setAttribute(k, v === true ? "" : v);
    });
    children.forEach((c) => { if (c !== null && c !== undefined) node.append(c); });
    return node;
  }

  const isGuidelines = (result) => result && result.status === 409 && result.data && result.data.code === "guidelines";

  // --- the conversations page: one button ------------------------------------------------------------------
  function listPage(cfg) {
    const button = $("start");
    if (!button) return;
    const error = $("start-error");
    const setGate = (closed) => {
      $("guidelines-gate").hidden = !closed;
      button.disabled = closed;
    };
    async function start() {
      button.disabled = true;
      $("start-spinner").hidden = false;
      error.textContent = "";
      let result = null;
      try {
        result = await call("POST", cfg.urls.start, {});
      } catch (e) {
        result = null;
      }
      $("start-spinner").hidden = true;
      button.disabled = false;
      if (result && result.ok && result.data && result.data.id) {
        window.location.assign(cfg.page.replace("{id}", result.data.id));
      } else if (isGuidelines(result)) {
        gate.refusal(error, result.data, () => { setGate(false); start(); });
      } else {
        error.textContent = errorText(result && result.data, gettext("The network failed; press the button again."));
      }
    }
    button.addEventListener("click", start);
    if (gate.pending() !== null) setGate(true);
    gate.panel(cfg.urls.guidelines_acknowledge, () => { setGate(false); button.focus(); });
  }

  // --- the conversation page -------------------------------------------------------------------------------
  // The API's conversation (chat.serializers.conversation_data) is the page's state: its `turns` (the writer's
  // `message`, the `answers`, the `preference`), `state`, and `waiting_for` (why no message may be sent now: the
  // server's one rule, chat.services.why_not_send). Each pending answer is polled at its own `links.self` and
  // replaced in place; the conversation is read again when a turn settles, so `waiting_for` stays the server's.
  function conversationPage(cfg) {
    const categories = Object.fromEntries(cfg.categories.map((c) => [c.name, c.label]));
    const state = {
      conversation: null,
      answers: new Map(),     // id -> the latest answer the API gave
      polls: new Map(),       // id -> timer
      draft: null,            // the message being sent, shown at once
      sending: false,
      gateClosed: gate.pending() !== null,
      asked: 0,               // calls that answer with the conversation, numbered as they start
      shown: 0,               // the number of the call whose conversation is shown
    };
    const transcript = $("transcript");
    const box = $("message-text");
    const status = $("composer-status");
    const composerError = $("composer-error");

    // "Model A", and the target's name after it only where the API reveals it (it is null while blinded for you).
    const nameOf = (a) => (a.target ? `${a.slot_name} (${a.target})` : a.slot_name || cfg.slots[a.slot]);
    const closed = () => Boolean(state.conversation && state.conversation.state === "closed");
    const turns = () => (state.conversation ? state.conversation.turns : []);
    const turnOf = (n) => turns().find((t) => t.turn === n);
    const answersOf = (t) => (t ? t.answers.map((a) => state.answers.get(a.id) || a) : []);
    const labelOf = (name) => (categories[name] || name).split(":")[0];

    function absorb(conversation) {
      state.conversation = conversation;
      conversation.turns.forEach((t) => t.answers.forEach((a) => {
        const known = state.answers.get(a.id);
        // a poll may have seen it settle after this conversation was read: keep the newer state
        if (!known || known.state === a.state || a.state !== "pending") state.answers.set(a.id, a);
      }));
    }

    function keep(answer) {
      state.answers.set(answer.id, answer);
      return answer;
    }

    // --- rendering: one turn at a time; an open gettext("Mark as failing") form and the focus survive a redraw ----------
    function turnNode(n) {
      let node = transcript.querySelector(`li.turn[data-turn="${n}"]`);
      if (!node) {
        node = el("li", { class: "turn", "data-turn": n });
        const after = [...transcript.querySelectorAll("li.turn")].find((x) => Number(x.dataset.turn) > n);
        transcript.insertBefore(node, after || null);
      }
      const empty = $("transcript-empty");
      if (empty) empty.remove();
      return node;
    }

    function renderTurn(n) {
      const t = turnOf(n);
      const draft = state.draft && state.draft.turn === n ? state.draft : null;
      const message = t && t.message ? t.message : draft;
      const node = turnNode(n);
      const bubble = node.querySelector(".bubble.mine");
      if (message) {
        const fresh = el("div", { class: `bubble mine${draft ? " sending" : ""}`, "data-message": message.id || "" },
          el("h3", { class: "speaker", text: gettext("You") }), el("p", { class: "message-text", text: message.text }),
          draft ? el("p", { class: "lead sending-note", text: gettext("Sending…") }) : null);
        if (bubble) bubble.replaceWith(fresh); else node.prepend(fresh);
      }
      let answers = node.querySelector(".answers");
      if (!answers) { answers = el("div", { class: "answers" }); node.append(answers); }
      answersOf(t).forEach((a) => renderAnswer(answers, a));
      renderChoice(node, t);
    }

    function renderAll() {
      transcript.replaceChildren();
      if (!turns().length) {
        transcript.append(el("li", { class: "turn-empty lead", id: "transcript-empty",
          text: gettext("Nothing said yet: write the first message below.") }));
      }
      turns().forEach((t) => renderTurn(t.turn));
    }

    function renderAnswer(container, a) {
      const card = container.querySelector(`article.answer[data-message="${a.id}"]`);
      const fresh = answerCard(a);
      if (!card) {
        const after = [...container.querySelectorAll("article.answer")].find((x) => Number(x.dataset.slot) > a.slot);
        container.insertBefore(fresh, after || null);
        return;
      }
      const openForm = card.querySelector(".failure-form:not([hidden])");
      const slot = fresh.querySelector(".failure-form");
      if (openForm && slot) {  // the writer is typing a reason: keep their form as it is
        slot.replaceWith(openForm);
        fresh.querySelector(".mark-toggle").setAttribute("aria-expanded", "true");
      }
      const focused = card.contains(document.activeElement) ? document.activeElement.id : null;
      card.replaceWith(fresh);
      if (focused && $(focused)) $(focused).focus();
    }

    function answerCard(a) {
      const name = nameOf(a);
      const card = el("article", { class: `answer ${a.state}${a.failure ? " marked" : ""}`, "data-message": a.id,
        "data-slot": a.slot, "aria-label": fmt(gettext("%(name)s, turn %(turn)s"), { name, turn: a.turn + 1 }) });
      card.append(el("h3", { class: "speaker", text: name }));
      if (a.state === "pending") {
        card.append(el("p", { class: "writing" }, el("span", { class: "spinner", "aria-hidden": "true" }), " " + gettext("writing…")));
        return card;
      }
      if (a.state === "failed") {
        const again = el("button", { type: "button", class: "secondary retry", id: `retry-${a.id}`,
          disabled: closed() }, gettext("Try again"));
        again.addEventListener("click", () => retry(a, again));
        card.append(el("p", { class: "error answer-error", text: a.error || fmt(gettext("%(name)s did not answer."), { name: a.slot_name }) }),
          el("p", {}, again));
        return card;
      }
      card.append(el("p", { class: "message-text", text: a.text }));
      const tools = el("div", { class: "answer-tools" });
      if (cfg.scale === "slider") tools.append(slider(a));
      tools.append(failureControl(a));
      card.append(tools);
      return card;
    }

    // A 0-100 slider under the answer, saved when it is let go (or moved with the arrow keys): one score per answer.
    function slider(a) {
      const rated = a.rating !== null && a.rating !== undefined;
      const id = `rating-${a.id}`;
      const input = el("input", { type: "range", min: 0, max: 100, step: 1, id, value: rated ? a.rating : 50,
        "aria-describedby": `rating-note-${a.id}`, "aria-valuetext": rated ? fmt(gettext("%(rating)s of 100"), { rating: a.rating }) : gettext("not rated yet"),
        disabled: closed() });
      const value = el("output", { for: id, class: "rating-value", id: `rating-value-${a.id}`, text: rated ? a.rating : "–" });
      const note = el("span", { class: "rating-note lead", id: `rating-note-${a.id}`, role: "status",
        text: rated ? gettext("Saved.") : gettext("Not rated yet: move the slider.") });
      input.addEventListener("input", () => {
        value.textContent = input.value;
        input.setAttribute("aria-valuetext", fmt(gettext("%(rating)s of 100"), { rating: input.value }));
      });
      // Saved a moment after the last move (arrow keys send one change per step), one call at a time, so the score
      // kept is the one shown.
      let timer = null;
      let saving = false;
      let again = false;
      async function save() {
        if (saving) { again = true; return; }
        saving = true;
        const score = parseInt(input.value, 10);
        note.textContent = gettext("Saving…");
        const result = await safeCall("POST", a.links.rating, { score });
        saving = false;
        if (again) { again = false; save(); return; }
        if (result && result.ok) {
          keep(result.data);  // the answer, with its rating
          note.textContent = fmt(gettext("Saved: %(rating)s of 100."), { rating: result.data.rating });
        } else if (isGuidelines(result)) {
          gate.refusal(note, result.data, save);
        } else note.textContent = errorText(result && result.data, gettext("Not saved: the network failed; move the slider again."));
      }
      input.addEventListener("change", () => {
        clearTimeout(timer);
        note.textContent = gettext("Saving…");
        timer = setTimeout(save, 250);
      });
      return el("div", { class: "rating" },
        el("label", { for: id }, fmt(gettext("Your rating of %(name)s's answer (0 = useless or harmful, 100 = exactly right)"), { name: a.slot_name })),
        el("div", { class: "rating-row" }, el("span", { class: "scale-end", "aria-hidden": "true", text: "0" }), input,
          el("span", { class: "scale-end", "aria-hidden": "true", text: "100" }), value), note);
    }

    // gettext("Mark as failing"): a category of the task's taxonomy and a reason, both required; afterwards the answer says
    // it is marked, and the mark can be taken back while no validator has judged it.
    function failureControl(a) {
      const wrap = el("div", { class: "failure" });
      if (a.failure) {
        wrap.append(el("p", { class: "marked-note", id: `marked-${a.id}` },
          el("span", { class: "tag bad", text: gettext("Marked as failing") }), " ",
          el("strong", { text: labelOf(a.failure.category) }), `: ${a.failure.reason}`));
        if (a.failure.can_retract && !closed()) {
          const undo = el("button", { type: "button", class: "link unmark", id: `unmark-${a.id}` }, gettext("Take the mark back"));
          undo.addEventListener("click", () => unmark(a, undo));
          wrap.append(el("p", {}, undo));
        }
        return wrap;
      }
      const formId = `failure-form-${a.id}`;
      const toggle = el("button", { type: "button", class: "secondary mark-toggle", id: `mark-${a.id}`,
        "aria-expanded": "false", "aria-controls": formId, disabled: closed() }, gettext("Mark as failing"));
      const select = el("select", { id: `category-${a.id}`, required: true },
        el("option", { value: "", text: gettext("Choose what fails…") }),
        ...cfg.categories.map((c) => el("option", { value: c.name, text: c.label })));
      const reason = el("textarea", { id: `reason-${a.id}`, rows: 2, required: true, maxlength: 2000 });
      const error = el("p", { class: "error", role: "alert", id: `failure-error-${a.id}` });
      const form = el("form", { class: "failure-form stack", id: formId, hidden: true, novalidate: true,
        "aria-label": fmt(gettext("Mark %(name)s's answer as failing"), { name: a.slot_name }) },
        el("p", {}, el("label", { for: select.id, text: gettext("What fails") }), select),
        el("p", {}, el("label", { for: reason.id, text: gettext("Why it fails (required)") }), reason),
        error,
        el("div", { class: "actions" }, el("button", { type: "submit", id: `save-failure-${a.id}` }, gettext("Save the mark")),
          el("button", { type: "button", class: "secondary cancel", id: `cancel-failure-${a.id}` }, gettext("Cancel"))));
      toggle.addEventListener("click", () => {
        form.hidden = !form.hidden;
        toggle.setAttribute("aria-expanded", String(!form.hidden));
        if (!form.hidden) select.focus();
      });
      form.querySelector(".cancel").addEventListener("click", () => {
        form.hidden = true;
        toggle.setAttribute("aria-expanded", "false");
        toggle.focus();
      });
      form.addEventListener("submit", (event) => { event.preventDefault(); markFailing(a, form); });
      wrap.append(el("p", {}, toggle), form);
      return wrap;
    }

    async function markFailing(a, form) {
      const category = form.querySelector("select").value;
      const reason = form.querySelector("textarea").value.trim();
      const error = form.querySelector(".error");
      if (!category) { error.textContent = gettext("Choose what fails."); form.querySelector("select").focus(); return; }
      if (!reason) { error.textContent = gettext("Say why the answer fails."); form.querySelector("textarea").focus(); return; }
      const button = form.querySelector("button[type=submit]");
      button.disabled = true;
      const result = await safeCall("POST", a.links.failure, { category, reason });
      button.disabled = false;
      if (result && result.ok) {
        form.hidden = true;  // no longer an open form: the card is drawn again, marked
        keep(result.data);  // the answer, with its `failure`
        renderTurn(a.turn);
        const focus = $(`unmark-${a.id}`) || $(`marked-${a.id}`);
        if (focus) focus.focus();
      } else if (isGuidelines(result)) gate.refusal(error, result.data, () => markFailing(a, form));
      else error.textContent = errorText(result && result.data, gettext("Not saved: the network failed; press the button again."));
    }

    async function unmark(a, button) {
      button.disabled = true;
      const result = await safeCall("DELETE", a.links.failure);
      if (result && result.ok) {
        keep(result.data);  // the answer, its `failure` null
        renderTurn(a.turn);
        const toggle = $(`mark-${a.id}`);
        if (toggle) toggle.focus();
      } else {
        button.disabled = false;
        if (isGuidelines(result)) gate.refusal(composerError, result.data, () => unmark(a, button));
        else showError(result);
      }
    }

    // Pairwise: "A is better / Tie / B is better" under the two answers once neither is being written; the next
    // message waits for it (the server's rule). The last turn's choice can change until the next message; an
    // earlier turn's is only shown.
    function renderChoice(node, t) {
      const old = node.querySelector(".choice");
      if (cfg.scale !== "pairwise" || !t) { if (old) old.remove(); return; }
      const answers = answersOf(t);
      const last = t.turn === Math.max(...turns().map((x) => x.turn));
      const settled = answers.length >= 2 && answers.every((a) => a.state !== "pending");
      const anyReady = answers.some((a) => a.state === "ready");
      const said = (p) => (p.winner === null || p.winner === undefined ? gettext("A tie") : fmt(gettext("%(name)s is better"), { name: cfg.slots[p.winner] }));
      let fresh = null;
      if (last && settled && anyReady && !closed()) {
        if (old && old.dataset.busy) return;
        const reasonId = `choice-reason-${t.turn}`;
        const typed = old && old.querySelector(`#${reasonId}`) ? old.querySelector(`#${reasonId}`).value
          : (t.preference ? t.preference.reason : "");
        const options = [[0, fmt(gettext("%(name)s is better"), { name: cfg.slots[0].replace("Model ", "") })], [null, gettext("Tie")],
          [1, fmt(gettext("%(name)s is better"), { name: cfg.slots[1].replace("Model ", "") })]];
        const buttons = options.map(([winner, text]) => {
          const pressed = Boolean(t.preference) && (t.preference.winner ?? null) === winner;
          const possible = winner === null ? answers.every((a) => a.state === "ready") : answers[winner].state === "ready";
          const b = el("button", { type: "button", class: `choose${pressed ? "" : " secondary"}`,
            "data-winner": winner === null ? "tie" : winner, id: `choose-${t.turn}-${winner === null ? "tie" : winner}`,
            "aria-pressed": String(pressed), disabled: !possible }, text);
          b.addEventListener("click", () => choose(t.turn, winner));
          return b;
        });
        fresh = el("fieldset", { class: "choice", id: `choice-${t.turn}` },
          el("legend", { text: t.preference ? fmt(gettext("Your choice: %(choice)s (you may change it until your next message)"), { choice: said(t.preference) })
            : gettext("Which answer is better?") }),
          el("div", { class: "actions choice-buttons" }, ...buttons),
          el("p", {}, el("label", { for: reasonId, text: gettext("Why (optional)") }),
            el("input", { type: "text", id: reasonId, maxlength: 1000, autocomplete: "off", value: typed || "" })),
          el("p", { class: "error", role: "alert", id: `choice-error-${t.turn}` }));
      } else if (t.preference) {
        fresh = el("p", { class: "choice choice-made", id: `choice-${t.turn}` }, gettext("Your choice:") + " ",
          el("strong", { text: said(t.preference) }), t.preference.reason ? ` (${t.preference.reason})` : "");
      }
      const focused = old && old.contains(document.activeElement) ? document.activeElement.id : null;
      if (old) old.remove();
      if (fresh) node.append(fresh);
      if (focused && $(focused)) $(focused).focus();
    }

    async function choose(turn, winner) {
      const fieldset = $(`choice-${turn}`);
      const reason = ($(`choice-reason-${turn}`) || { value: "" }).value.trim();
      fieldset.dataset.busy = "1";
      fieldset.querySelectorAll("button").forEach((b) => { b.disabled = true; });
      const asked = ++state.asked;
      const result = await safeCall("POST", cfg.urls.preferences, { turn, winner, reason });
      delete fieldset.dataset.busy;
      if (result && result.ok) {
        show(result.data, asked);  // the conversation, with the choice
        if (!box.disabled) box.focus();
        else if ($(`choice-${turn}`)) $(`choice-${turn}`).querySelector("[aria-pressed=true]")?.focus();
      } else {
        renderTurn(turn);
        const error = $(`choice-error-${turn}`);
        if (isGuidelines(result)) gate.refusal(error, result.data, () => choose(turn, winner));
        else error.textContent = errorText(result && result.data, gettext("Not saved: the network failed; choose again."));
      }
    }

    // --- answers arrive: each pending answer is polled until it is ready or failed ----------------------------
    function poll(a, delay) {
      if (state.polls.has(a.id)) return;
      const wait = delay || cfg.poll_ms;
      state.polls.set(a.id, setTimeout(async () => {
        const result = await safeCall("GET", a.links.self);
        state.polls.delete(a.id);
        if (!result || !result.ok) { poll(a, Math.min(wait * 2, 5000)); return; }
        const fresh = keep(result.data);
        if (fresh.state === "pending") { poll(fresh, Math.min(wait * 1.25, 3000)); return; }
        // the turn settled: read the conversation again (the server says whether a message may be sent now), and
        // show the answer with it; else show this answer now
        if (answersOf(turnOf(fresh.turn)).some((x) => x.state === "pending") || !(await refresh())) {
          renderTurn(fresh.turn);
          updateComposer();
        }
      }, wait));
    }

    function pollPending() {
      state.answers.forEach((a) => { if (a.state === "pending") poll(a); });
    }

    async function retry(a, button) {
      button.disabled = true;
      const result = await safeCall("POST", a.links.retry, {});
      if (result && result.ok) {
        keep(result.data);  // the answer, pending again
        renderTurn(a.turn);
        updateComposer();
        pollPending();
      } else {
        button.disabled = false;
        if (isGuidelines(result)) gate.refusal(composerError, result.data, () => retry(a, button));
        else showError(result);
      }
    }

    // --- the message box: open only when a message may be sent; otherwise it says why ------------------------
    function blocked() {
      if (closed()) return gettext("This conversation is finished.");
      if (!cfg.writer) return gettext("Only the task's writers may send messages.");
      if (state.gateClosed) return gettext("Read the guidelines above and confirm them first.");
      if (state.sending) return gettext("Sending your message…");
      const last = turns().length ? turns()[turns().length - 1] : null;
      const writing = answersOf(last).filter((a) => a.state === "pending");
      if (writing.length) {
        return `${writing.map((a) => a.slot_name).join(" and ")} ${writing.length > 1 ? "are" : "is"} writing: wait for the answer before you send your next message.`;
      }
      const why = state.conversation && state.conversation.waiting_for;
      return why ? `${why[0].toUpperCase()}${why.slice(1)}${why.endsWith(".") ? "" : "."}` : "";
    }

    function updateComposer() {
      const reason = blocked();
      box.disabled = Boolean(reason);
      $("send").disabled = Boolean(reason);
      status.textContent = reason;
      $("guidelines-gate").hidden = !state.gateClosed;
      const used = turns().length;
      $("turn-count").textContent = fmt(gettext("(%(used)s of %(max)s sent)"), { used, max: cfg.max_turns });
      const done = closed();
      $("finish").hidden = done || !cfg.writer;
      $("another").hidden = !done;
      $("convo-state").textContent = done ? gettext("Finished") : gettext("Open");
      $("convo-state").classList.toggle("good", done);
    }

    function updateCount() {
      const n = box.value.length;
      const count = $("message-count");
      count.textContent = `${n} / ${cfg.max_message_chars}`;
      count.classList.toggle("near", n > cfg.max_message_chars * 0.9);
    }

    async function send(event) {
      if (event) event.preventDefault();
      composerError.textContent = "";
      const text = box.value.trim();
      if (blocked()) return;
      if (!text) { composerError.textContent = gettext("Write a message first."); box.focus(); return; }
      // The message shows at once; the API's answer puts the saved message and its pending answers in its place.
      const turn = turns().length ? turns()[turns().length - 1].turn + 1 : 0;
      state.draft = { turn, text };
      state.sending = true;
      renderTurn(turn);
      updateComposer();
      $("send-spinner").hidden = false;
      const result = await safeCall("POST", cfg.urls.messages, { text });
      $("send-spinner").hidden = true;
      state.sending = false;
      state.draft = null;
      if (result && result.ok) {
        const data = result.data;
        const conversation = state.conversation;
        conversation.turns = conversation.turns.filter((t) => t.turn !== turn)
          .concat([{ turn, message: data.message, answers: data.answers, preference: null }]);
        conversation.waiting_for = "the models are still answering your last message";
        data.answers.forEach(keep);
        box.value = "";
        updateCount();
        renderTurn(turn);
        pollPending();
      } else {
        const node = transcript.querySelector(`li.turn[data-turn="${turn}"]`);
        if (node && !turnOf(turn)) node.remove();
        if (!turns().length) renderAll();
        if (isGuidelines(result)) gate.refusal(composerError, result.data, () => { state.gateClosed = false; send(); });
        else composerError.textContent = errorText(result && result.data, gettext("Not sent: the network failed; send it again (your text is kept)."));
      }
      updateComposer();
      if (!box.disabled) box.focus();
    }

    async function finish() {
      const button = $("finish");
      button.disabled = true;
      const asked = ++state.asked;
      const result = await safeCall("POST", cfg.urls.close, {});
      button.disabled = false;
      if (result && result.ok) {
        show(result.data, asked);  // the conversation, finished
        renderAll();
        $("another").focus();
      } else if (isGuidelines(result)) gate.refusal(composerError, result.data, finish);
      else showError(result);
    }

    function showError(result) {
      composerError.textContent = errorText(result && result.data, gettext("The network failed; try again."));
    }

    async function safeCall(method, url, body) {
      try {
        return await call(method, url, body);
      } catch (e) {
        return null;
      }
    }

    // The conversation as the API gave it: its turns, each choice, and why no message may be sent now.
    // `asked`: the number of the call that brought it; an answer to an older call than the one shown last is stale
    // (a poll's read that crossed "Finish" must not open the conversation again) and is left out.
    function show(conversation, asked) {
      if (asked < state.shown) return;
      state.shown = asked;
      absorb(conversation);
      turns().forEach((t) => renderTurn(t.turn));
      updateComposer();
      pollPending();
    }

    async function refresh() {
      const asked = ++state.asked;
      const result = await safeCall("GET", cfg.urls.conversation);
      if (!result || !result.ok) { showError(result); return false; }
      show(result.data, asked);
      return true;
    }

    async function load() {
      const result = await safeCall("GET", cfg.urls.conversation);
      if (!result || !result.ok) { showError(result); return; }
      absorb(result.data);
      renderAll();
      updateComposer();
      pollPending();
      document.body.dataset.chatReady = "1";  // the page has taken over from the server's first render
    }

    $("composer").addEventListener("submit", send);
    box.addEventListener("input", updateCount);
    box.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) send(event);
    });
    $("finish").addEventListener("click", finish);
    gate.panel(cfg.urls.guidelines_acknowledge, () => {
      state.gateClosed = false;
      updateComposer();
      if (!box.disabled) box.focus();
    });
    updateCount();
    load();
  }

  const conversation = pageData("chat-config");
  if (conversation) conversationPage(conversation);
  const list = pageData("chat-list-config");
  if (list) listPage(list);
})();

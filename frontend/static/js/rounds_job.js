// Follows a pipeline job: polls its JSON every second and updates the progress bar, steps and logs.
// The job's API address comes from the page (data-job-url on #job-steps); calls go through api.js.
(function () {
  "use strict";
  const gettext = window.gettext || ((text) => text);  // the /jsi18n/ catalogue (base.html)
  const fmt = (text, values) => text.replace(/%\((\w+)\)s/g, (whole, key) => String(values[key]));
  const api = window.dynabench.api;
  const $ = (sel, root) => (root || document).querySelector(sel);
  const steps = $("#job-steps");
  const url = steps && steps.dataset.jobUrl;

  function setBar(el, fraction) {
    const pct = Math.round((fraction || 0) * 100);
    $(".bar", el).style.width = pct + "%";
    if (el.hasAttribute("aria-valuenow")) el.setAttribute("aria-valuenow", String(pct));
  }

  function renderStep(step) {
    const li = document.querySelector('[data-step="' + step.name + '"]');
    if (!li) return;
    li.className = "step " + step.status;
    $(".step-status", li).textContent = step.status;
    $(".step-time", li).textContent = step.seconds != null ? step.seconds + " s" : "";
    $(".step-message", li).textContent = step.message || "";
    $(".step-error", li).textContent = step.error || "";
    $(".step-log", li).textContent = step.log || "";
    setBar($(".mini", li), step.progress);
  }

  const pct = (v) => (v == null ? "—" : (100 * v).toFixed(1) + "%");

  // The before/after table, built once the compare step has stored it (the page renders it when it loads later).
  function renderComparison(table) {
    if ($("#job-comparison")) return;
    const section = document.createElement("section");
    section.id = "job-comparison";
    const h2 = document.createElement("h2");
    h2.textContent = fmt(gettext("Before and after: %(metric)s of the live ensemble (round %(live)s) and the new one (round %(new)s)"),
      { metric: table.metric, live: table.live_round, new: table.new_round });
    const t = document.createElement("table");
    t.className = "grid";
    t.id = "comparison-table";
    const head = t.createTHead().insertRow();
    [gettext("Test set"), gettext("Examples"), gettext("Live"), gettext("New"), gettext("Difference (points)")].forEach((name) => {
      const th = document.createElement("th");
      th.textContent = name;
      head.appendChild(th);
    });
    const body = t.createTBody();
    table.rows.forEach((r) => {
      const tr = body.insertRow();
      if ((table.worse || []).includes(r.label)) tr.className = "bad";
      [r.small ? r.label + " (" + gettext("small set: decides nothing") + ")" : r.label, String(r.size), pct(r.live), pct(r.new), r.delta == null ? "–" : r.delta.toFixed(1)].forEach((v) => {
        tr.insertCell().textContent = v;
      });
    });
    section.append(h2, t);
    $("#job-actions").before(section);
  }

  function render(job) {
    $("#job-status").textContent = job.status;
    $("#job-error").textContent = job.error || "";
    $("#job-to-round").textContent = job.to_round != null ? job.to_round : "…";
    setBar($("#job-progress"), job.progress);
    job.steps.forEach(renderStep);
    const actions = job.actions || {};
    $("#job-actions").hidden = !(actions.retry || actions.abandon);
    $("#job-retry-form").hidden = !actions.retry;
    $("#job-stuck").hidden = !job.stale;
    $("#job-awaiting").hidden = job.status !== "awaiting";
    if (job.comparison) {
      renderComparison(job.comparison);
      $("#job-worse").textContent = (job.comparison.worse || []).join(", ");
      $("#job-tolerance").textContent = String(job.comparison.tolerance);
    }
    const done = $("#job-done");
    done.hidden = job.status !== "done";
    $(".to-round", done).textContent = job.to_round;
  }

  function poll() {
    api.get(url)
      .then((result) => (result.ok ? result.data : Promise.reject(result.status)))
      .then((job) => {
        render(job);
        if (job.status === "pending" || job.status === "running") setTimeout(poll, 1000);
        else if (job.status === "awaiting") setTimeout(poll, 5000);  // an owner may decide in another tab
      })
      .catch(() => setTimeout(poll, 5000));
  }

  if (url) poll();
})();

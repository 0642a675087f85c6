// Follows a pipeline job: polls its JSON every second and updates the progress bar, steps and logs.
// The job's API address comes from the page (data-job-url on #job-steps); calls go through api.js.
(function () {
  "use strict";
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
    // A decision to take (or one just taken) brings the comparison table: the page shows it on a reload.
    if ($("#job-awaiting").dataset.status !== job.status && (job.status === "awaiting" || job.status === "done")
        && job.comparison && !$("#job-comparison")) {
      window.location.reload();
      return;
    }
    $("#job-awaiting").hidden = job.status !== "awaiting";
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
      })
      .catch(() => setTimeout(poll, 5000));
  }

  if (url) poll();
})();

// Shared by the page scripts (create.js, validate.js, rounds_job.js): JSON calls to the site's API with the
// CSRF token, and the sentence to show a person when a call fails. API addresses come from the page (data
// attributes or json_script written with {% url %}), never from the scripts.
//
//   const api = window.dynabench.api;
//   const result = await api.call("POST", url, body);   // {ok, status, data, retryAfter}; throws only when the network fails
//   api.get(url), api.post(url, body)                    // shorthands
//   api.errorText(result.data, "fallback")               // the answer's `detail`, else the fallback
//   api.showError(element, result.data, "fallback")      // puts that sentence into the element
//   api.pageData("create-config")                        // the object a json_script tag holds
(function (root) {
  "use strict";

  function csrfToken() {
    const input = document.querySelector("input[name=csrfmiddlewaretoken]");
    if (input) return input.value;
    const cookie = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return cookie ? decodeURIComponent(cookie[1]) : "";
  }

  async function call(method, url, body) {
    const headers = { Accept: "application/json" };
    if (method !== "GET" && method !== "HEAD") headers["X-CSRFToken"] = csrfToken();
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const response = await fetch(url, {
      method,
      credentials: "same-origin",
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const data = response.status === 204 ? null : await response.json().catch(() => ({}));
    return { ok: response.ok, status: response.status, data, retryAfter: response.headers.get("Retry-After") };
  }

  // The API's error answers are {"detail": "one sentence", "errors": {field: [messages]}}.
  function errorText(data, fallback) {
    return (data && data.detail) || fallback || (root.gettext ? root.gettext("Something went wrong.") : "Something went wrong.");
  }

  function showError(element, data, fallback) {
    if (element) element.textContent = errorText(data, fallback);
  }

  function pageData(id) {
    const node = document.getElementById(id);
    return node ? JSON.parse(node.textContent) : null;
  }

  root.dynabench = root.dynabench || {};
  root.dynabench.api = {
    call,
    get: (url) => call("GET", url),
    post: (url, body) => call("POST", url, body),
    errorText,
    showError,
    pageData,
  };
})(window);

// The dashboard's one script: sends the pages' changes to the JSON API with the access
// token header, and reloads a page when the API answer it watches changes.
"use strict";

const token = document.querySelector('meta[name="mc-token"]')?.content ?? "";

function flash(text) {
  const place = document.getElementById("flash");
  if (place) place.textContent = text;
}

// A form with `data-api` posts its fields as one JSON object; a checkbox is a boolean.
document.addEventListener("submit", async (event) => {
  const form = event.target;
  if (!(form instanceof HTMLFormElement) || !form.dataset.api) return;
  event.preventDefault();
  if (form.dataset.confirm && !window.confirm(form.dataset.confirm)) return;
  const body = {};
  for (const field of form.elements) {
    if (!field.name) continue;
    body[field.name] = field.type === "checkbox" ? field.checked : field.value;
  }
  try {
    const answer = await fetch(form.dataset.api, {
      method: "POST",
      headers: { "content-type": "application/json", "x-magic-context-token": token },
      body: JSON.stringify(body),
    });
    if (answer.status === 202) {
      // Accepted, not applied yet: the team store does not answer and the change is queued.
      const queued = await answer.json().catch(() => ({}));
      flash(queued.message ?? "queued");
    } else if (answer.ok) {
      window.location.reload();
    } else {
      const error = await answer.json().catch(() => ({}));
      flash(error.error ?? `refused: ${answer.status}`);
    }
  } catch (error) {
    flash(`the proxy did not answer: ${error}`);
  }
});

// Live refresh: the watched answer is read as soon as the page loads (what the page shows),
// then every few seconds; the page reloads when it differs. Reading it first only at the
// first tick would take a change made in the meantime as the page's own, and never show it.
const watched = document.body.dataset.refresh;
if (watched) {
  let first = null;
  const check = async () => {
    try {
      const answer = await fetch(watched, { headers: { "x-magic-context-token": token } });
      if (!answer.ok) return;
      const text = await answer.text();
      if (first === null) first = text;
      else if (text !== first) window.location.reload();
    } catch (_) {
      // The proxy is restarting; the next tick tries again.
    }
  };
  check();
  window.setInterval(check, 5000);
}

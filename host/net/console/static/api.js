// The console's JSON API (/_wk/console/api/...): reads are GETs with the session cookie;
// actions are POSTs that also carry the page's CSRF token. Without a session (401), the
// page goes to the login.

const BASE = "/_wk/console/api";
const csrf = document.querySelector('meta[name="wk-csrf"]')?.content || "";

function toLogin() {
  const next = location.pathname + location.search;
  location.assign(`/_wk/console/login?next=${encodeURIComponent(next)}`);
}

async function answer(r) {
  if (r.status === 401) {
    toLogin();
    throw new Error("no session: log in again");
  }
  let doc;
  try {
    doc = await r.json();
  } catch {
    throw new Error(`the host answered ${r.status}, not JSON`);
  }
  if (!r.ok) throw new Error(doc.error || `status ${r.status}`);
  return doc;
}

export async function get(name, params = {}) {
  const q = new URLSearchParams(params);
  return answer(await fetch(`${BASE}/${name}?${q}`, {credentials: "same-origin"}));
}

// An operator's move on an instance: {status, answer, error} (a refusal by the instance
// comes back as error, not as a throw).
export async function act(cls, id, action, args = {}, note = "") {
  const r = await fetch(`${BASE}/action`, {
    method: "POST", credentials: "same-origin",
    headers: {"Content-Type": "application/json", "x-wk-csrf": csrf},
    body: JSON.stringify({cls, id, action, args, note}),
  });
  return answer(r);
}

// Another operator's request that is not a move (the compatibility report): its answer.
export async function post(name, body) {
  const r = await fetch(`${BASE}/${name}`, {
    method: "POST", credentials: "same-origin",
    headers: {"Content-Type": "application/json", "x-wk-csrf": csrf},
    body: JSON.stringify(body),
  });
  return answer(r);
}

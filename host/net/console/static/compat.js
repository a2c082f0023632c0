// A workflow class's compatibility report: would a new build (a .wasm on the server's
// machine) replay the class's live instances? `wkhost workflow compat`'s report, asked
// through POST /_wk/console/api/compat (docs/operating.md): nothing of the instances
// changes, nothing of theirs runs. It can take a while: the button says so meanwhile.
import {clear, consoleUrl, h, table} from "./dom.js";
import {post} from "./api.js";

function row(cls, v) {
  return h("tr", {"data-testid": "compat-row", dataset: {id: v.id, verdict: v.verdict}},
           h("td", {}, h("a", {href: consoleUrl("instance", {cls, id: v.id})}, v.id)),
           h("td", {}, v.state), h("td", {class: `verdict verdict-${v.ok ? "ok" : "bad"}`},
                                   v.verdict),
           h("td", {class: "num"}, String(v.positions)), h("td", {}, v.detail || ""));
}

function shown(out, cls, got) {
  const r = got.report;
  if (!r) return clear(out, h("p", {class: "error", "data-testid": "compat-error"},
                              got.error || "no report"));
  const bad = r.instances.filter((v) => !v.ok).length;
  clear(out,
        h("p", {"data-testid": "compat-summary"},
          `${r.instances.length} instances: ${r.instances.length - bad} replay, ${bad} would `
          + "not. A snapshot: an instance that moves on may change its answer."),
        table(["id", "state", "verdict", "positions", "why"],
              r.instances.map((v) => row(cls, v)), {id: "compat", class: "grid"}));
}

export function compatSection(cls) {
  const out = h("div", {id: "compat-result"});
  const input = h("input", {id: "compat-wasm", name: "wasm", size: 60,
                            placeholder: "/path/on/the/server/new-build.wasm"});
  const button = h("button", {type: "submit", id: "compat-check"}, "Check");
  const form = h("form", {id: "compat-form", class: "filters"},
                 h("label", {}, "a new build ", input), button);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    button.disabled = true;
    button.textContent = "Checking…";
    try {
      shown(out, cls, await post("compat", {cls, wasm: input.value.trim()}));
    } catch (err) {
      clear(out, h("p", {class: "error", "data-testid": "compat-error"}, String(err.message)));
    } finally {
      button.disabled = false;
      button.textContent = "Check";
    }
  });
  return h("section", {id: "compat-section"},
           h("h2", {}, "Would a new build replay them?"), form, out);
}

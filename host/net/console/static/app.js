// The console's entry: picks the view from the page's path, renders it, and refreshes
// it every 2 s while the page is visible (not while a confirmation is open).
import {clear, h} from "./dom.js";
import * as classes from "./classes.js";
import * as list from "./list.js";
import * as instance from "./instance.js";
import * as audit from "./audit.js";
import * as schedules from "./schedules.js";

const POLL_MS = 2000;
const VIEWS = {"": classes, "class": list, "instance": instance, "audit": audit,
               "schedules": schedules};

const root = document.getElementById("view");
const live = document.getElementById("live");
const dialog = document.getElementById("confirm");
const params = new URLSearchParams(location.search);
const name = location.pathname.replace(/^\/_wk\/console\/?/, "").replace(/\/$/, "");
const view = VIEWS[name] || classes;
let busy = false;

function crumbs() {
  const nav = document.getElementById("crumbs");
  const cls = params.get("cls");
  const parts = [h("a", {href: "/_wk/console/"}, "classes")];
  if (cls) parts.push(" / ", h("a", {href: `/_wk/console/class?cls=${encodeURIComponent(cls)}`}, cls));
  if (name === "instance" && params.get("id")) parts.push(" / ", params.get("id"));
  for (const [view, label] of [["audit", "audit log"], ["schedules", "schedules"]]) {
    if (name === view) parts.push(" / ", label);
    else parts.push(" · ", h("a", {href: `/_wk/console/${view}`, id: `nav-${view}`}, label));
  }
  clear(nav, parts);
}

async function refresh() {
  if (busy) return;
  busy = true;
  try {
    await view.refresh(root, params);
    live.textContent = `live · ${new Date().toLocaleTimeString("en-GB")}`;
    live.className = "live-ok";
  } catch (e) {
    live.textContent = `not updated: ${e.message}`;
    live.className = "live-error";
  } finally {
    busy = false;
  }
}

async function start() {
  crumbs();
  try {
    await view.render(root, params);
  } catch (e) {
    clear(root, h("p", {class: "error", role: "alert"}, e.message));
    return;
  }
  live.textContent = "live";
  setInterval(() => {
    if (document.visibilityState === "visible" && !dialog.open) refresh();
  }, POLL_MS);
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "visible") refresh();
    else live.textContent = "paused (page hidden)";
  });
}

start();

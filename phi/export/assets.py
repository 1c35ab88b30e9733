"""The inline stylesheet and script of an exported session page (SPEC §16 EXPORT-1).

Both are constants written into the page; the page's Content-Security-Policy allows exactly these
two (by their SHA-256 hashes), so nothing else can run or load even if some text escaped its
escaping. The script only toggles classes and ``<details>`` elements; it never builds HTML from
strings. When it has set everything up it marks ``<body data-ready="1">`` (the browser test checks
that it ran to the end).
"""

from __future__ import annotations

import base64
import hashlib

CSS = """
:root { --fg: #1d1f24; --muted: #6a6f7a; --bg: #fbfbfc; --card: #ffffff; --line: #dfe2e8;
  --user: #eef4ff; --assistant: #ffffff; --tool: #f6f7f9; --add: #e6ffec; --del: #ffebe9;
  --hunk: #ddf4ff; --ok: #1a7f37; --bad: #cf222e; --warn: #9a6700; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg);
  background: var(--bg); }
header#summary { padding: 12px 20px; border-bottom: 1px solid var(--line); background: var(--card); }
header#summary h1 { font-size: 18px; margin: 0 0 6px; }
dl.facts { display: flex; flex-wrap: wrap; gap: 4px 18px; margin: 0; }
dl.facts div { display: flex; gap: 6px; } dl.facts dt { color: var(--muted); } dl.facts dd { margin: 0; }
.toolbar { margin-top: 8px; display: flex; gap: 8px; }
button { font: inherit; padding: 2px 10px; border: 1px solid var(--line); border-radius: 6px;
  background: var(--bg); cursor: pointer; }
.layout { display: flex; align-items: flex-start; }
nav#tree { position: sticky; top: 0; width: 320px; max-height: 100vh; overflow: auto; flex: none;
  padding: 12px; border-right: 1px solid var(--line); }
nav#tree h2, main h2 { font-size: 15px; margin: 0 0 8px; }
ul.tree, ul.tree ul { list-style: none; margin: 0; padding-left: 14px; }
ul.tree { padding-left: 0; } ul.tree li { margin: 2px 0; }
ul.tree a { color: inherit; text-decoration: none; } ul.tree a:hover { text-decoration: underline; }
.group-label { color: var(--muted); font-style: italic; }
main#conversation { flex: 1; min-width: 0; padding: 12px 20px; }
section.loop { border: 1px solid var(--line); border-radius: 8px; background: var(--card); margin: 0 0 16px;
  padding: 10px 12px; }
section.loop.current { outline: 2px solid #0969da; }
.loop-head h3 { font-size: 14px; margin: 0; font-family: ui-monospace, monospace; word-break: break-all; }
.meta { color: var(--muted); font-size: 12px; }
.badge { display: inline-block; padding: 0 6px; border-radius: 10px; font-size: 12px; border: 1px solid var(--line); }
.status-Completed { color: var(--ok); } .status-Error, .status-Aborted, .status-Limit { color: var(--bad); }
.status-Rejected, .status-Vetoed, .status-Pending, .status-Running { color: var(--warn); }
.selected { color: var(--ok); font-weight: 600; }
ol.messages { list-style: none; margin: 8px 0 0; padding: 0; }
li.msg { margin: 6px 0; padding: 6px 10px; border-radius: 6px; border: 1px solid var(--line); }
li.msg-user { background: var(--user); } li.msg-assistant { background: var(--assistant); }
li.msg-toolResult, li.msg-extension { background: var(--tool); }
.role { font-weight: 600; font-size: 12px; text-transform: uppercase; color: var(--muted); }
.text { white-space: pre-wrap; overflow-wrap: anywhere; }
details.thinking { color: var(--muted); font-style: italic; border-left: 3px solid var(--line); padding-left: 8px; }
body.hide-thinking details.thinking { display: none; }
.tool-call { margin: 6px 0; border: 1px solid var(--line); border-radius: 6px; background: var(--tool); }
.tool-call > details > summary { padding: 4px 8px; cursor: pointer; font-family: ui-monospace, monospace; }
.tool-body { padding: 0 8px 8px; }
.tool-call.is-error > details > summary { color: var(--bad); }
pre { margin: 4px 0; padding: 6px 8px; background: var(--card); border: 1px solid var(--line); border-radius: 4px;
  overflow: auto; max-height: 480px; white-space: pre-wrap; overflow-wrap: anywhere;
  font: 12px/1.4 ui-monospace, SFMono-Regular, Menlo, monospace; }
pre.diff span { display: block; } .d-add { background: var(--add); } .d-del { background: var(--del); }
.d-hunk { background: var(--hunk); color: var(--muted); } .d-file { font-weight: 600; }
h4 { margin: 6px 0 2px; font-size: 12px; color: var(--muted); }
.usage { font-size: 12px; color: var(--muted); font-family: ui-monospace, monospace; }
.subagent { margin: 6px 0 0 10px; padding-left: 8px; border-left: 3px solid #8250df; }
.missing { color: var(--bad); }
img.inline { max-width: 480px; max-height: 360px; display: block; margin: 4px 0; }
""".strip()

JS = """
(function () {
  "use strict";
  var body = document.body;
  function setAll(open) {
    var all = document.querySelectorAll("main details");
    for (var i = 0; i < all.length; i++) { all[i].open = open; }
  }
  function reveal(id) {
    var target = id ? document.getElementById(id) : null;
    if (!target) { return; }
    for (var node = target.parentElement; node; node = node.parentElement) {
      if (node.tagName === "DETAILS") { node.open = true; }
    }
    var current = document.querySelectorAll("section.loop.current");
    for (var i = 0; i < current.length; i++) { current[i].classList.remove("current"); }
    target.classList.add("current");
  }
  document.getElementById("expand-all").addEventListener("click", function () { setAll(true); });
  document.getElementById("collapse-all").addEventListener("click", function () { setAll(false); });
  document.getElementById("toggle-thinking").addEventListener("click", function () {
    body.classList.toggle("hide-thinking");
  });
  var links = document.querySelectorAll("nav#tree a[href^='#']");
  for (var i = 0; i < links.length; i++) {
    links[i].addEventListener("click", function (event) { reveal(event.currentTarget.getAttribute("href").slice(1)); });
  }
  window.addEventListener("hashchange", function () { reveal(window.location.hash.slice(1)); });
  if (window.location.hash) { reveal(window.location.hash.slice(1)); }
  body.setAttribute("data-ready", "1");
})();
""".strip()


def csp_hash(text: str) -> str:
    """The CSP source expression that allows exactly this inline ``<style>`` or ``<script>`` text."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


CONTENT_SECURITY_POLICY = (f"default-src 'none'; img-src data:; style-src {csp_hash(CSS)}; "
                           f"script-src {csp_hash(JS)}; base-uri 'none'; form-action 'none'")

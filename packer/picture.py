"""A pack as a picture: `cas report`'s page, and `cas show --tree`'s token-count tree.

The page is one HTML file that needs nothing else to be seen (its style and script inline, no
font, image or request from elsewhere): a treemap of the pack's files (area by tokens or by
bytes, colour by tier, folders nested), the budget bar, the omitted and withheld files with their
reasons, and a filter box that the treemap and the lists follow (``pack.html#filter=TEXT``
opens the page filtered). Python computes every number
the page shows, the two layouts included (`packer.treemap`); the script only draws them. So the
page's bytes are a function of the manifest (and the name and digest it is shown under): no
time, no random order, no float.

Names reach the page only inside one JSON block, where every ``<``, ``>`` and ``&`` is a
``\\u`` escape (so no name can close the block or open a tag), and the script puts them in the
page as text (``textContent``), never as markup. They are the names as `cas.display.shown`
writes them, so a control character shows as its escape.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, Final

from cas.display import shown
from cas.manifest import Manifest
from packer.treemap import TIER_NAMES, Folder, folder_tree, layout, tier_of, weight_by

WIDTH: Final = 1200
HEIGHT: Final = 640
MEASURES: Final = ("tokens", "bytes")
TREE_DEPTH: Final = 3


def _flat(rects: Any) -> list[int]:
    return [v for r in rects for v in r]


def _walk(node: Folder) -> Iterator[Folder]:
    """``node`` and the folders below it, each before its own, by name."""
    yield node
    for name in sorted(node.folders, key=lambda n: n.encode("utf-8", "surrogateescape")):
        yield from _walk(node.folders[name])


def page_data(manifest: Manifest, name: str, digest: str) -> dict[str, Any]:
    """Everything the page shows, as JSON-ready integers and strings."""
    entries = manifest.entries
    root = folder_tree(entries)
    folders = list(_walk(root))
    layouts: dict[str, Any] = {}
    for measure in MEASURES:
        tm = layout(root, weight_by(measure, entries), WIDTH, HEIGHT)
        rect_of = {f.path: r for f, r in tm.folders}
        layouts[measure] = {
            "files": _flat(tm.files),
            "folders": _flat(rect_of[f.path] for f in folders),
        }
    spent = sum(e.tokens for e in entries)
    totals = manifest.totals
    rendered = totals.get("tokens")
    used = rendered.get("markdown", spent) if isinstance(rendered, dict) else spent
    return {
        "name": shown(name),
        "digest": digest,
        "scope": shown(manifest.scope),
        "target": shown(manifest.target) if manifest.target else None,
        "kind": manifest.kind,
        "tokenizer": manifest.tokenizer,
        "budget": {"target": manifest.budget_target, "max": manifest.budget_max},
        "used": used,
        "overhead": max(used - spent, 0),
        "tiers": list(TIER_NAMES),
        "totals": {
            "files": root.counts,
            "tokens": root.tokens,
            "bytes": root.sizes,
        },
        "files": [
            [shown(e.path), tier_of(e), e.tokens, e.size, shown(e.reason or "")] for e in entries
        ],
        "folders": [[shown(f.path) if f.path else ".", f.depth] for f in folders],
        "width": WIDTH,
        "height": HEIGHT,
        "layouts": layouts,
    }


def _script_json(data: dict[str, Any]) -> str:
    """``data`` as JSON safe inside a script element: only ASCII, and no ``<``, ``>`` or ``&``
    (each appears only inside strings, where its ``\\u`` escape reads the same)."""
    text = json.dumps(data, ensure_ascii=True, sort_keys=True, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def html_report(manifest: Manifest, name: str, digest: str) -> str:
    """The page of ``manifest``, shown as pack ``name`` with ``digest``."""
    return _PAGE.replace("@DATA@", _script_json(page_data(manifest, name, digest)))


# --- the tree in a terminal ------------------------------------------------------------------


def _children(node: Folder, manifest: Manifest) -> list[tuple[int, int, str, Folder | int]]:
    rows: list[tuple[int, int, str, Folder | int]] = [
        (f.total_tokens, f.total_bytes, f.name + "/", f) for f in node.folders.values()
    ]
    for i in node.files:
        e = manifest.entries[i]
        rows.append((e.tokens, e.size, e.path.rsplit("/", 1)[-1], i))
    rows.sort(key=lambda r: (-r[0], -r[1], r[2].encode("utf-8", "surrogateescape")))
    return rows


def token_tree(manifest: Manifest, depth: int = TREE_DEPTH) -> Iterator[str]:
    """Lines of the tree of ``manifest``'s folders and files down to ``depth`` levels below the
    root: the tokens the pack spends there, the bytes, the files, and the files by tier; most
    tokens first at each level."""
    root = folder_tree(manifest.entries)
    yield (
        f"{'tokens':>8}{'bytes':>12}{'files':>7}{'full':>6}{'summary':>8}{'omitted':>8}"
        f"{'withheld':>9}  path"
    )

    def line(tokens: int, size: int, counts: list[int], label: str, level: int) -> str:
        tiers = "".join(f"{c:>{w}}" for c, w in zip(counts, (6, 8, 8, 9), strict=True))
        return f"{tokens:>8}{size:>12}{sum(counts):>7}{tiers}  {'  ' * level}{shown(label)}"

    yield line(root.total_tokens, root.total_bytes, root.counts, "./", 0)

    def below(node: Folder, level: int) -> Iterator[str]:
        for tokens, size, label, item in _children(node, manifest):
            if isinstance(item, Folder):
                yield line(tokens, size, item.counts, label, level)
                if level < depth:
                    yield from below(item, level + 1)
            else:
                counts = [0] * len(TIER_NAMES)
                counts[tier_of(manifest.entries[item])] = 1
                yield line(tokens, size, counts, label, level)

    if depth > 0:
        yield from below(root, 1)


_PAGE: Final = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; \
style-src 'unsafe-inline'; script-src 'unsafe-inline'">
<title>cas report</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 16px 24px; color: #212529; background: #fff; }
h1 { font-size: 20px; margin: 0 0 4px; }
h2 { font-size: 16px; margin: 20px 0 6px; }
.meta { color: #495057; margin-bottom: 10px; word-break: break-all; }
.bar { display: flex; position: relative; height: 22px; border: 1px solid #adb5bd;
  background: #f1f3f5; margin: 6px 0 2px; }
.bar div.seg { height: 100%; }
.bar .mark { position: absolute; top: -4px; bottom: -4px; width: 2px; background: #212529; }
.t0 { background: #2f9e44; fill: #2f9e44; }
.t1 { background: #4263eb; fill: #4263eb; }
.t2 { background: #adb5bd; fill: #adb5bd; }
.t3 { background: #e03131; fill: #e03131; }
.over { background: #495057; }
.legend span.sw { display: inline-block; width: 12px; height: 12px; margin: 0 4px 0 12px;
  vertical-align: -1px; }
.controls { margin: 12px 0 8px; display: flex; gap: 16px; align-items: center; flex-wrap: wrap; }
.controls input[type=search] { width: 320px; padding: 3px 6px; font: inherit; }
#map { width: 100%; height: auto; display: block; border: 1px solid #dee2e6; background: #fff; }
#map rect.f { stroke: #fff; stroke-width: 0.5; }
#map rect.f.off { opacity: 0.12; }
#map rect.d { fill: none; stroke: #343a40; stroke-width: 1; pointer-events: none; }
#map text { font-size: 11px; fill: #212529; stroke: #fff; stroke-width: 3px;
  paint-order: stroke; pointer-events: none; }
#hover { min-height: 1.4em; color: #343a40; word-break: break-all; }
table { border-collapse: collapse; }
td, th { text-align: left; padding: 1px 12px 1px 0; vertical-align: top; }
td.n, th.n { text-align: right; }
td.p { font-family: ui-monospace, monospace; word-break: break-all; }
tr.off { display: none; }
.count { color: #495057; font-weight: normal; }
</style>
</head>
<body>
<h1 id="title">cas report</h1>
<div class="meta" id="meta"></div>
<noscript><p>This page draws its treemap and lists with its own inline script.</p></noscript>
<div id="budget"></div>
<div class="legend" id="legend"></div>
<div class="controls">
<label>Filter paths <input type="search" id="filter" placeholder="substring of a path"></label>
<span>Area by <label><input type="radio" name="measure" value="tokens" checked> tokens</label>
<label><input type="radio" name="measure" value="bytes"> bytes</label></span>
<span id="matched"></span>
</div>
<svg id="map" xmlns="http://www.w3.org/2000/svg" role="img"></svg>
<div id="hover"></div>
<h2>Omitted <span class="count" id="omitted-count"></span></h2>
<table id="omitted"></table>
<h2>Withheld <span class="count" id="withheld-count"></span></h2>
<table id="withheld"></table>
<script type="application/json" id="data">@DATA@</script>
<script>
"use strict";
(function () {
  var D = JSON.parse(document.getElementById("data").textContent);
  var SVG = "http://www.w3.org/2000/svg";
  var TIER_LABEL = ["full", "summary", "omitted", "withheld"];
  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    for (var k in attrs) { e.setAttribute(k, attrs[k]); }
    if (text !== undefined) { e.textContent = text; }
    return e;
  }
  function num(n) { return String(n).replace(/\\B(?=(\\d{3})+(?!\\d))/g, ","); }
  function pct(n, d) { return d > 0 ? Math.floor(100 * n / d) : 0; }

  document.getElementById("title").textContent = "cas report: " + D.name;
  document.title = "cas report: " + D.name;
  document.getElementById("meta").textContent =
    "scope " + D.scope + (D.target ? ", target " + D.target : "") + ", " + D.kind +
    ", tokenizer " + D.tokenizer + ", " + num(D.files.length) + " files, " + D.digest;

  // the budget bar: the max is the whole bar; a mark at the target
  var budget = document.getElementById("budget");
  var top = Math.max(D.budget.max, D.used, 1);
  budget.appendChild(el("div", {}, "Budget: " + num(D.used) + " tokens used of target " +
    num(D.budget.target) + " (" + pct(D.used, D.budget.target) + "%), max " +
    num(D.budget.max) + " (" + pct(D.used, D.budget.max) + "%)"));
  var bar = el("div", {"class": "bar", "id": "bar"});
  var parts = [];
  for (var t = 0; t < 4; t++) { parts.push(["t" + t, D.totals.tokens[t], TIER_LABEL[t]]); }
  parts.push(["over", D.overhead, "header, map and lists"]);
  parts.forEach(function (p) {
    if (p[1] <= 0) { return; }
    var seg = el("div", {"class": "seg " + p[0],
      "title": p[2] + ": " + num(p[1]) + " tokens"});
    seg.style.width = (100 * p[1] / top) + "%";
    bar.appendChild(seg);
  });
  var mark = el("div", {"class": "mark", "title": "target " + num(D.budget.target)});
  mark.style.left = (100 * D.budget.target / top) + "%";
  bar.appendChild(mark);
  budget.appendChild(bar);

  var legend = document.getElementById("legend");
  for (var i = 0; i < 4; i++) {
    legend.appendChild(el("span", {"class": "sw t" + i}));
    legend.appendChild(document.createTextNode(TIER_LABEL[i] + " " +
      num(D.totals.files[i]) + " files, " + num(D.totals.tokens[i]) + " tokens, " +
      num(D.totals.bytes[i]) + " bytes"));
  }

  // the treemap: both layouts come computed; drawing one is placing its rectangles
  var map = document.getElementById("map");
  map.setAttribute("viewBox", "0 0 " + D.width + " " + D.height);
  var hover = document.getElementById("hover");
  function describe(f) {
    return f[0] + ": " + TIER_LABEL[f[1]] + ", " + num(f[2]) + " tokens, " + num(f[3]) +
      " bytes" + (f[4] ? " (" + f[4] + ")" : "");
  }
  var rects = D.files.map(function (f, i) {
    var r = document.createElementNS(SVG, "rect");
    r.setAttribute("class", "f t" + f[1]);
    var title = document.createElementNS(SVG, "title");
    title.textContent = describe(f);
    r.appendChild(title);
    r.addEventListener("mouseenter", function () { hover.textContent = describe(f); });
    map.appendChild(r);
    return r;
  });
  var boxes = D.folders.map(function (d) {
    var r = document.createElementNS(SVG, "rect");
    r.setAttribute("class", "d");
    r.setAttribute("stroke-width", String(Math.max(3 - d[1], 0.5)));
    map.appendChild(r);
    var label = document.createElementNS(SVG, "text");
    label.textContent = d[0];
    map.appendChild(label);
    return [r, label];
  });
  function place(r, q, k) {
    r.setAttribute("x", q[k]); r.setAttribute("y", q[k + 1]);
    r.setAttribute("width", q[k + 2]); r.setAttribute("height", q[k + 3]);
  }
  var names = document.createElementNS(SVG, "g");
  map.appendChild(names);
  function draw(measure) {
    var L = D.layouts[measure];
    rects.forEach(function (r, i) { place(r, L.files, 4 * i); });
    // the names of files with room for one, drawn again for each layout
    names.textContent = "";
    D.files.forEach(function (f, i) {
      var k = 4 * i;
      if (L.files[k + 2] < 90 || L.files[k + 3] < 34) { return; }
      var label = document.createElementNS(SVG, "text");
      var base = f[0].slice(f[0].lastIndexOf("/") + 1);
      var room = Math.floor((L.files[k + 2] - 8) / 6.5);  // about 6.5 units a character
      label.textContent = base.length > room ? base.slice(0, room - 1) + "\\u2026" : base;
      label.setAttribute("x", L.files[k] + 4);
      label.setAttribute("y", L.files[k + 1] + 28);
      names.appendChild(label);
    });
    boxes.forEach(function (b, i) {
      var k = 4 * i;
      place(b[0], L.folders, k);
      var shows = D.folders[i][1] === 1 && L.folders[k + 2] > 80 && L.folders[k + 3] > 18;
      b[1].setAttribute("x", L.folders[k] + 3);
      b[1].setAttribute("y", L.folders[k + 1] + 12);
      b[1].style.display = shows ? "" : "none";
    });
  }

  // the lists, in the manifest's order (by path)
  function list(id, tier) {
    var table = document.getElementById(id);
    var head = el("tr");
    head.appendChild(el("th", {}, "path"));
    head.appendChild(el("th", {}, "reason"));
    head.appendChild(el("th", {"class": "n"}, "bytes"));
    table.appendChild(head);
    var rows = [];
    D.files.forEach(function (f, i) {
      if (f[1] !== tier) { return; }
      var tr = el("tr");
      tr.appendChild(el("td", {"class": "p"}, f[0]));
      tr.appendChild(el("td", {}, f[4]));
      tr.appendChild(el("td", {"class": "n"}, num(f[3])));
      table.appendChild(tr);
      rows.push([i, tr]);
    });
    return rows;
  }
  var lists = [["omitted", list("omitted", 2)], ["withheld", list("withheld", 3)]];

  var lowered = D.files.map(function (f) { return f[0].toLowerCase(); });
  function filter() {
    var q = document.getElementById("filter").value.toLowerCase();
    var hits = 0;
    rects.forEach(function (r, i) {
      var on = q === "" || lowered[i].indexOf(q) >= 0;
      if (on) { hits++; }
      r.classList.toggle("off", !on);
    });
    lists.forEach(function (l) {
      var shown = 0;
      l[1].forEach(function (row) {
        var on = q === "" || lowered[row[0]].indexOf(q) >= 0;
        if (on) { shown++; }
        row[1].classList.toggle("off", !on);
      });
      document.getElementById(l[0] + "-count").textContent = q === "" ?
        "(" + num(l[1].length) + ")" : "(" + num(shown) + " of " + num(l[1].length) + ")";
    });
    document.getElementById("matched").textContent =
      q === "" ? "" : num(hits) + " of " + num(D.files.length) + " files match";
  }
  // a filter can come with the page's address: pack.html#filter=tests%2F
  var given = /^#filter=(.*)$/.exec(window.location.hash);
  if (given) {
    try { document.getElementById("filter").value = decodeURIComponent(given[1]); } catch (e) {}
  }
  document.getElementById("filter").addEventListener("input", filter);
  document.querySelectorAll("input[name=measure]").forEach(function (b) {
    b.addEventListener("change", function () { draw(b.value); });
  });
  // a browser may restore the form's state on a reload: draw what it shows
  draw(document.querySelector("input[name=measure]:checked").value);
  filter();
}());
</script>
</body>
</html>
"""

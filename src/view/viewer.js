"use strict";
// The interactive view: frames inserted from the page's data, laid out with the rules of
// src/view/place.rs (keep the two in step: the browser test compares them), pan/zoom, collapse,
// hover details and the step slider.
(function () {
  var GAP_X = 28, GAP_Y = 44, PAD = 8;
  var data = JSON.parse(document.getElementById("frames").textContent);
  var svg = document.getElementById("view");
  var viewport = document.getElementById("viewport");
  var root = document.getElementById("root");
  var tip = document.getElementById("tip");
  var slider = document.getElementById("step");
  var before = document.getElementById("before");
  var collapsed = new Set();
  var view = { x: 0, y: 0, s: 1 };

  function kids(el, cls) {
    return Array.prototype.filter.call(el.children, function (c) { return c.classList.contains(cls); });
  }
  function fixed(v) { return v.toFixed(1); }

  // Places the boxes of `scope` and of the scopes inside it; returns the scope's [width, height].
  function place(scope) {
    var items = kids(scope, "item");
    var layers = JSON.parse(scope.dataset.layers);
    var size = items.map(function (it) {
      var w = +it.dataset.w, h = +it.dataset.h;
      var body = kids(it, "scope")[0];
      if (body) {
        var closed = collapsed.has(it.dataset.id);
        it.classList.toggle("collapsed", closed);
        body.style.display = closed ? "none" : "";
        if (!closed) {
          var b = place(body);
          w = Math.max(w, b[0] + 2 * PAD);
          h = h + b[1] + PAD;
        }
      }
      var box = kids(it, "box")[0];
      box.setAttribute("width", fixed(w));
      box.setAttribute("height", fixed(h));
      return [w, h];
    });
    var edgeGroup = kids(scope, "edges")[0];
    var edges = edgeGroup ? kids(edgeGroup, "edge") : [];
    var preds = items.map(function () { return []; });
    var outs = items.map(function () { return 0; });
    edges.forEach(function (e) {
      preds[+e.dataset.to].push(+e.dataset.from);
      outs[+e.dataset.from] += 1;
    });
    var at = items.map(function () { return [0, 0]; });
    var y = 0;
    layers.forEach(function (layer) {
      var cursor = -Infinity, rowH = 0;
      layer.forEach(function (v) {
        var w = size[v][0], want;
        if (preds[v].length === 0) {
          want = Math.max(cursor, 0);
        } else {
          var sum = 0;
          preds[v].forEach(function (u) { sum += at[u][0] + size[u][0] / 2; });
          want = sum / preds[v].length - w / 2;
        }
        var x = Math.max(want, cursor);
        at[v] = [x, y];
        cursor = x + w + GAP_X;
        rowH = Math.max(rowH, size[v][1]);
      });
      y += rowH + GAP_Y;
    });
    var left = Infinity;
    at.forEach(function (p) { left = Math.min(left, p[0]); });
    if (!isFinite(left)) left = 0;
    var width = 0;
    items.forEach(function (it, k) {
      at[k][0] -= left;
      it.setAttribute("transform", "translate(" + fixed(at[k][0]) + "," + fixed(at[k][1]) + ")");
      width = Math.max(width, at[k][0] + size[k][0]);
    });
    edges.forEach(function (e) {
      var a = +e.dataset.from, b = +e.dataset.to;
      var x1 = at[a][0] + size[a][0] / 2, y1 = at[a][1] + size[a][1];
      var x2 = at[b][0] + size[b][0] / 2, y2 = at[b][1];
      var ym = (y1 + y2) / 2;
      e.querySelector("path").setAttribute("d", "M" + fixed(x1) + " " + fixed(y1) + " C" + fixed(x1) + " " +
        fixed(ym) + " " + fixed(x2) + " " + fixed(ym) + " " + fixed(x2) + " " + fixed(y2));
      // Where the label goes: the rule of draw.rs, `label_at`.
      var lx = (x1 + x2) / 2, ly = ym + 3;
      if (outs[a] === 1) { lx = x1; ly = y1 + 12; } else if (preds[b].length === 1) { lx = x2; ly = y2 - 6; }
      var t = e.querySelector("text");
      t.setAttribute("x", fixed(lx));
      t.setAttribute("y", fixed(ly));
    });
    return [width, Math.max(y - GAP_Y, 0)];
  }

  // Hover details live in data attributes, not <title>, so the browser's own tooltip stays away.
  function takeTitles(el) {
    Array.prototype.forEach.call(el.querySelectorAll("title"), function (t) {
      t.parentNode.dataset.info = t.textContent;
      t.remove();
    });
  }

  function mark(ids, cls) {
    var set = new Set(ids);
    Array.prototype.forEach.call(root.querySelectorAll(".item"), function (it) {
      it.classList.toggle(cls, set.has(it.dataset.id));
    });
  }

  function show() {
    var k = +slider.value;
    var shownBefore = before.checked && k > 0;
    var f = data.frames[shownBefore ? k - 1 : k];
    var html = f.items.map(function (i) { return data.fragments[i]; }).join("");
    var edges = f.edges.map(function (i) { return data.fragments[i]; }).join("");
    root.innerHTML = html + "<g class=\"edges\">" + edges + "</g>";
    root.dataset.layers = JSON.stringify(f.layers);
    takeTitles(root);
    place(root);
    mark(shownBefore ? [] : data.frames[k].changed, "changed");
    mark(shownBefore ? data.frames[k].replaced : [], "removed");
    document.getElementById("stepno").textContent = k + " / " + (data.frames.length - 1);
    document.getElementById("steptitle").textContent =
      (shownBefore ? "before " : "") + data.frames[k].title;
  }

  function apply() {
    viewport.setAttribute("transform", "translate(" + view.x + "," + view.y + ") scale(" + view.s + ")");
  }

  // The whole drawing (`all`), or its width down to half size, top-left first (so a large
  // program opens readable rather than as a thumbnail).
  function fit(all) {
    var b = viewport.getBBox();
    var r = svg.getBoundingClientRect();
    var sw = r.width / (b.width + 20), sh = r.height / (b.height + 20);
    view.s = all ? Math.min(1, sw, sh) : Math.min(1, Math.max(sw, 0.5));
    view.x = 10 - b.x * view.s;
    view.y = 10 - b.y * view.s;
    apply();
  }

  svg.addEventListener("wheel", function (e) {
    e.preventDefault();
    var r = svg.getBoundingClientRect();
    var mx = e.clientX - r.left, my = e.clientY - r.top;
    var f = Math.exp(-e.deltaY * 0.0015);
    view.x = mx - (mx - view.x) * f;
    view.y = my - (my - view.y) * f;
    view.s *= f;
    apply();
  }, { passive: false });

  var drag = null;
  svg.addEventListener("pointerdown", function (e) {
    drag = { x: e.clientX, y: e.clientY, vx: view.x, vy: view.y, moved: false };
  });
  window.addEventListener("pointermove", function (e) {
    if (drag) {
      var dx = e.clientX - drag.x, dy = e.clientY - drag.y;
      if (Math.abs(dx) + Math.abs(dy) > 3) drag.moved = true;
      if (drag.moved) {
        svg.classList.add("panning");
        view.x = drag.vx + dx;
        view.y = drag.vy + dy;
        apply();
      }
    }
    var target = e.target.closest ? e.target.closest(".item, .edge") : null;
    if (target && !drag) {
      // The innermost box under the pointer: its header, not the map it sits in.
      tip.textContent = target.dataset.info || "";
      tip.hidden = !target.dataset.info;
      tip.style.left = Math.min(e.clientX + 14, window.innerWidth - 300) + "px";
      tip.style.top = (e.clientY + 14) + "px";
    } else {
      tip.hidden = true;
    }
  });
  window.addEventListener("pointerup", function (e) {
    var wasClick = drag && !drag.moved;
    drag = null;
    svg.classList.remove("panning");
    if (!wasClick) return;
    var t = e.target;
    var it = t.closest ? t.closest(".item.map") : null;
    // Only the map's own box or header text toggles it, not a click inside its body.
    if (it && (t.parentNode === it)) {
      var id = it.dataset.id;
      if (collapsed.has(id)) collapsed.delete(id); else collapsed.add(id);
      place(root);
    }
  });

  function everyMap(fn) {
    Array.prototype.forEach.call(root.querySelectorAll(".item.map"), function (m) { fn(m.dataset.id); });
    place(root);
  }
  document.getElementById("collapse").addEventListener("click", function () {
    everyMap(function (id) { collapsed.add(id); });
  });
  document.getElementById("expand").addEventListener("click", function () {
    collapsed.clear();
    everyMap(function () {});
  });
  document.getElementById("fit").addEventListener("click", function () { fit(true); });
  slider.addEventListener("input", show);
  before.addEventListener("change", show);

  show();
  fit(false);
  document.body.dataset.viewStatus = "ok: " + root.querySelectorAll(".item").length + " boxes, " +
    data.frames.length + " frame(s)";
})();

// The sample browser. Data: the manifest in #browser-data and the script files beside the
// page (samples/, see mmrobust/report/browser_files.py), each calling mmrobustChunk(kind, k,
// data): a browser runs a <script src> from file:// where it refuses fetch(), so the report
// opens from disk. With no filter a page of cards needs one or two chunk files; a filter
// loads the compact index (and the ids, for the id search), selects the samples, then loads
// the chunks of the page it shows. Only one page of cards is in the DOM.
// Every string from the data goes into the page as text (textContent), never as HTML.
(function () {
  "use strict";
  var t0 = performance.now();
  var M = JSON.parse(document.getElementById("browser-data").textContent);
  document.body.setAttribute("data-parse-ms", Math.round(performance.now() - t0));
  var runs = M.runs, R = runs.length, N = M.n;
  var $ = function (id) { return document.getElementById(id); };
  var fType = $("f-type"), fRun = $("f-run"), fCorrect = $("f-correct"), fStatus = $("f-status"),
      fId = $("f-id"), fSize = $("f-size"), count = $("count"), cards = $("cards"),
      pageInfo = $("page-info"), prev = $("prev"), next = $("next");
  var page = 0, matches = null, fGen = 0, rGen = 0, first = true;  // matches: null (no filter) or indices

  // The files: each is added once as a <script>; its call fills the cache and runs what waits.
  var cache = {chunk: {}, index: {}, ids: {}}, waiting = {}, nCached = 0;
  function fileName(kind, k) {
    var s = String(k), width = kind === "chunk" ? 6 : 4;
    while (s.length < width) { s = "0" + s; }
    return M.dir + "/" + kind + "-" + s + ".js";
  }
  window.mmrobustChunk = function (kind, k, data) {
    if (kind === "chunk") {
      data.samples.forEach(function (s) { s.P = data.prompts; });
      cache.chunk[k] = data.samples;
      nCached += 1;
    } else if (kind === "index") {
      cache.index[k] = data;
    } else if (kind === "ids") {
      cache.ids[k] = data.map(function (x) { return String(x).toLowerCase(); });
    }
    var cbs = waiting[kind + k] || [];
    delete waiting[kind + k];
    cbs.forEach(function (cb) { cb(); });
  };
  function need(kind, ks, done) {  // done() once every file of ks is in
    var left = 1;
    var one = function () { left -= 1; if (left === 0) { done(); } };
    ks.forEach(function (k) {
      if (cache[kind][k] !== undefined) { return; }
      left += 1;
      if (waiting[kind + k]) { waiting[kind + k].push(one); return; }
      waiting[kind + k] = [one];
      var s = document.createElement("script"), name = fileName(kind, k);
      s.src = name;
      s.onload = function () { s.remove(); };
      s.onerror = function () {
        s.remove();
        delete waiting[kind + k];
        count.textContent = "cannot read " + name + ": keep the " + M.dir +
          "/ folder beside index.html";
        count.className = "warn";
      };
      document.head.appendChild(s);
    });
    one();
  }
  function blocks(step) {
    var out = [];
    for (var k = 0; k * step < N; k++) { out.push(k); }
    return out;
  }

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    return e;
  }
  function option(select, value, text) {
    var o = el("option", null, text);
    o.value = value;
    select.appendChild(o);
  }
  // Ids such as "attribute/number/04" or "bigbuckbunny__dropping" break only after / or _.
  function idNode(id) {
    var span = el("span", "id"), parts = String(id).split(/([\/_])/);
    parts.forEach(function (p) {
      span.appendChild(document.createTextNode(p));
      if (p === "/" || p === "_") { span.appendChild(document.createElement("wbr")); }
    });
    return span;
  }
  function statusGroup(s) { return s === "ok" || s === "parse_fail" ? s : "error"; }
  function runName(i) { return runs[i].label + " · " + runs[i].dataset; }

  // Filter options: types in order of first appearance, runs labelled with their dataset.
  M.types.forEach(function (t) { if (t) { option(fType, t, t); } });
  runs.forEach(function (r, i) { option(fRun, String(i), runName(i)); });

  // Answer filter. With one model chosen: its answer is correct / incorrect. With Model = all,
  // over the answers left by the other filters: "every run correct" (the card shows them all),
  // "any run incorrect" (the card shows the wrong ones; with "every run correct" it splits the
  // cards in two) and "every run incorrect".
  var answerLabels = {
    one: {correct: "correct", incorrect: "incorrect"},
    all: {correct: "every run correct", incorrect: "any run incorrect", "all-incorrect": "every run incorrect"}
  };
  function labelAnswers() {
    var labels = fRun.value ? answerLabels.one : answerLabels.all;
    Array.prototype.forEach.call(fCorrect.options, function (o) {
      if (!o.value) { return; }
      o.hidden = o.disabled = !labels[o.value];
      if (labels[o.value]) { o.textContent = labels[o.value]; }
    });
    if (fCorrect.value && !labels[fCorrect.value]) { fCorrect.value = "incorrect"; }
  }
  function visibleAnswers(s) {
    var run = fRun.value, correct = fCorrect.value, status = fStatus.value;
    var base = s.r.filter(function (a) {
      return (!run || String(a[0]) === run) && (!status || statusGroup(a[3]) === status);
    });
    var right = base.filter(function (a) { return a[4]; });
    if (!correct) { return base; }
    if (correct === "incorrect") { return base.filter(function (a) { return !a[4]; }); }
    if (correct === "correct") { return run ? right : (right.length === base.length ? base : []); }
    return right.length ? [] : base;  // all-incorrect: every (remaining) run got it wrong
  }
  // The index's code of (sample, run): 0 no answer, else 1 + 2 x status group + correct.
  function keep(c, off, run, status, correct) {
    var nBase = 0, nRight = 0;
    for (var r = 0; r < R; r++) {
      var code = c.charCodeAt(off + r) - 48;
      if (!code || (run >= 0 && r !== run) || (status >= 0 && ((code - 1) >> 1) !== status)) { continue; }
      nBase += 1;
      nRight += (code - 1) & 1;
    }
    if (!nBase) { return false; }
    if (!correct) { return true; }  // the same rules as visibleAnswers
    if (correct === "incorrect") { return nRight < nBase; }
    if (correct === "correct") { return run >= 0 ? nRight > 0 : nRight === nBase; }
    return nRight === 0;
  }
  function active() {
    return fType.value || fRun.value || fCorrect.value || fStatus.value || fId.value.trim();
  }
  function filter(done) {  // matches: the indices of the samples the filters keep
    var my = ++fGen, q = fId.value.trim().toLowerCase(), bs = blocks(M.block);
    if (!active()) { matches = null; done(); return; }
    count.textContent = "filtering " + N + " samples…";
    need("index", bs, function () {
      var go = function () {
        if (my !== fGen) { return; }
        var type = fType.value ? M.types.indexOf(fType.value) : -1;
        var run = fRun.value === "" ? -1 : parseInt(fRun.value, 10);
        var status = {"": -1, ok: 0, parse_fail: 1, error: 2}[fStatus.value];
        var correct = fCorrect.value, out = new Int32Array(N), m = 0;
        bs.forEach(function (b) {
          var ix = cache.index[b], ids = q ? cache.ids[b] : null, base = b * M.block;
          var t = ix.t, c = ix.c;
          for (var j = 0; j < t.length; j++) {
            if ((type >= 0 && t[j] !== type) || (ids && ids[j].indexOf(q) < 0)) { continue; }
            if (keep(c, j * R, run, status, correct)) { out[m++] = base + j; }
          }
        });
        matches = out.subarray(0, m);
        done();
      };
      if (q) { need("ids", bs, go); } else { go(); }
    });
  }

  function pct(i, n) { return (100 * i / Math.max(1, n)).toFixed(3) + "%"; }
  function track(row) {
    var t = el("div", "tl-track");
    row.appendChild(t);
    return t;
  }
  function tlRow(box, label, title) {
    var row = el("div", "tl-row");
    var lab = el("span", "tl-label", label);
    lab.title = title || label;
    row.appendChild(lab);
    box.appendChild(row);
    return track(row);
  }
  function timeline(s, shown) {
    var n = s.n, box = el("div", "tl");
    if (s.w) {
      var t = tlRow(box, "tamper window", "frames [" + s.w[0] + ", " + s.w[1] + ")");
      if (s.w[1] === s.w[0]) {  // a dropping seam: the frames around it were not adjacent
        var seam = el("div", "tl-seam");
        seam.style.left = pct(s.w[0], n);
        seam.title = "frames dropped here: cut between frames " + (s.w[0] - 1) + " and " + s.w[0];
        t.appendChild(seam);
        var lab = el("span", "tl-seam-label", "cut at frame " + s.w[0]);
        lab.style.left = pct(s.w[0], n);
        t.appendChild(lab);
      } else {
        var win = el("div", "tl-win");
        win.style.left = pct(s.w[0], n);
        win.style.width = pct(s.w[1] - s.w[0], n);
        win.title = "tamper window: frames " + s.w[0] + "-" + (s.w[1] - 1);
        t.appendChild(win);
      }
    }
    shown.forEach(function (a) {
      var pw = a[8];
      if (!pw) { return; }
      var t = tlRow(box, runs[a[0]].label + ": predicted", runName(a[0]) + ": predicted window");
      var p = el("div", "tl-pred");
      p.style.left = pct(pw[0], n);
      p.style.width = pct(Math.max(0, pw[1] - pw[0]), n);
      p.title = runs[a[0]].label + ": predicted window, frames " + pw[0] + "-" + pw[1];
      t.appendChild(p);
    });
    shown.forEach(function (a) {
      if (a[9] < 0) { return; }
      var idx = s.fs[a[9]];
      var t = tlRow(box, runs[a[0]].label + ": frames shown", runName(a[0]) + ": " + idx.length +
                    " frames shown: " + idx.join(", "));
      idx.forEach(function (i) {
        var k = el("div", "tl-tick");
        k.style.left = pct(i + 0.5, n);
        k.title = runs[a[0]].label + ": frame " + i;
        t.appendChild(k);
      });
    });
    if (!box.childNodes.length) { return null; }
    var axis = el("div", "tl-axis");
    axis.appendChild(el("span", null, "frame 0"));
    axis.appendChild(el("span", null, n + " frames"));
    box.appendChild(axis);
    return box;
  }
  function promptBlock(s, shown) {
    var box = el("div", "prompt"), distinct = [];
    shown.forEach(function (a) { if (distinct.indexOf(a[10]) < 0) { distinct.push(a[10]); } });
    distinct.forEach(function (pi) {
      var who = shown.filter(function (a) { return a[10] === pi; })
        .map(function (a) { return runs[a[0]].label; });
      var d = el("details");
      d.open = s.b !== "tamper";  // one tamper prompt serves every clip: folded
      var sum = el("summary", null, distinct.length === 1 ? "Prompt sent" :
                   "Prompt sent to " + who.join(", "));
      d.appendChild(sum);
      d.appendChild(el("pre", null, s.P[pi]));
      box.appendChild(d);
    });
    return box;
  }
  function answersTable(shown) {
    var table = el("table", "ans"), head = el("tr");
    ["model", "raw answer", "letter", "status", ""].forEach(function (h) { head.appendChild(el("th", null, h)); });
    table.appendChild(head);
    shown.forEach(function (a) {
      var tr = el("tr");
      tr.setAttribute("data-run", String(a[0]));
      tr.appendChild(el("td", null, runs[a[0]].label));
      var raw = el("td", "raw", a[1]);
      if (a[5]) { raw.appendChild(el("span", "warn", " [" + a[5] + "]")); }
      if (a[11]) {  // a thinking model's reasoning, collapsed
        var det = el("details", "reasoning");
        det.appendChild(el("summary", null, a[12]));
        det.appendChild(el("div", null, a[11]));
        raw.appendChild(det);
      }
      tr.appendChild(raw);
      tr.appendChild(el("td", null, a[2] || "–"));
      var st = el("td", null, a[3]);
      if (a[6] === 0) {
        var w = el("span", "warn", " (window not shown)");
        w.title = "no frame shown to the model lies inside the tamper window";
        st.appendChild(w);
      }
      if (a[7]) { st.appendChild(document.createTextNode(" · " + a[7])); }
      tr.appendChild(st);
      tr.appendChild(el("td", a[4] ? "correct" : "incorrect", a[4] ? "✓" : "✗"));
      table.appendChild(tr);
    });
    return table;
  }
  function card(s, shown) {
    var c = el("div", "card"), head = el("div", "head"), tags = el("span");
    c.setAttribute("data-type", s.t);
    head.appendChild(idNode(s.id));
    tags.appendChild(el("span", "tag data", s.d));
    if (s.t) { tags.appendChild(el("span", "tag" + (s.t === "original" ? " original" : ""), s.t)); }
    if (s.k) { tags.appendChild(el("span", "tag", s.k)); }
    if (s.p) { tags.appendChild(el("span", "tag", s.p)); }
    tags.appendChild(el("span", "tag", "truth: " + s.a));
    head.appendChild(tags);
    c.appendChild(head);
    if (s.th) {
      var strip = el("div", "strip"), img = el("img", s.v ? "" : "still");
      img.loading = "lazy";
      img.src = s.th;
      img.alt = "frames of " + s.m;
      strip.appendChild(img);
      c.appendChild(strip);
    } else if (s.m) {
      c.appendChild(el("p", "nothumb", s.te ? "media unreadable: " + s.te :
        "no thumbnail (the report draws at most " + M.max_thumbs +
        (M.thumb_seconds ? " within " + M.thumb_seconds + " s" : "") +
        "; mmrobust report --thumbs N --thumb-seconds S): " + s.m));
    }
    if (s.v && s.n && (s.w || shown.some(function (a) { return a[8] || a[9] >= 0; }))) {
      var tl = timeline(s, shown);
      if (tl) { c.appendChild(tl); }
    }
    c.appendChild(promptBlock(s, shown));
    c.appendChild(answersTable(shown));
    return c;
  }

  function render(done) {  // draw the page of cards (after loading its chunks)
    var my = ++rGen, size = parseInt(fSize.value, 10) || 50;
    var n = matches === null ? N : matches.length, pages = Math.max(1, Math.ceil(n / size));
    page = Math.max(0, Math.min(page, pages - 1));
    var idx = [], ks = [];
    for (var i = page * size; i < Math.min(n, (page + 1) * size); i++) {
      var s = matches === null ? i : matches[i], k = Math.floor(s / M.chunk);
      idx.push(s);
      if (ks.indexOf(k) < 0) { ks.push(k); }
    }
    need("chunk", ks, function () {
      if (my !== rGen) { return; }
      cards.textContent = "";
      var frag = document.createDocumentFragment();
      idx.forEach(function (s) {
        var smp = cache.chunk[Math.floor(s / M.chunk)][s % M.chunk];
        frag.appendChild(card(smp, visibleAnswers(smp)));
      });
      cards.appendChild(frag);
      count.removeAttribute("class");
      count.textContent = n + " of " + N + " samples";
      pageInfo.textContent = "page " + (page + 1) + " of " + pages;
      prev.disabled = page === 0;
      next.disabled = page >= pages - 1;
      if (nCached > 64) {  // keep the memory of a few pages
        Object.keys(cache.chunk).forEach(function (k) {
          if (ks.indexOf(Number(k)) < 0) { delete cache.chunk[k]; nCached -= 1; }
        });
      }
      if (done) { done(); }
    });
  }
  // data-ms: how long filtering every sample and drawing a page took (loading the files
  // it needed included); the body's data-first-ms: when the first page was drawn.
  function update(keepPage) {
    var t = performance.now();
    if (keepPage !== true) { page = 0; }
    filter(function () {
      render(function () {
        count.setAttribute("data-ms", Math.round(performance.now() - t));
        if (first) {
          first = false;
          document.body.setAttribute("data-first-ms", Math.round(performance.now()));
        }
      });
    });
  }
  // A filtered view can be linked: index.html#run=0&answer=incorrect&type=rotation&status=ok&id=v1
  // (and &page=3, &size=100)
  var fromHash = {type: fType, run: fRun, answer: fCorrect, status: fStatus, id: fId, size: fSize};
  location.hash.replace(/^#/, "").split("&").forEach(function (kv) {
    var i = kv.indexOf("="), name = decodeURIComponent(kv.slice(0, i)), f = fromHash[name];
    var value = decodeURIComponent(kv.slice(i + 1));
    if (i > 0 && f) { f.value = value; }
    if (i > 0 && name === "page") { page = Math.max(0, (parseInt(value, 10) || 1) - 1); }
  });
  labelAnswers();
  fRun.addEventListener("change", labelAnswers);
  [fType, fRun, fCorrect, fStatus, fSize].forEach(function (e) { e.addEventListener("change", update); });
  fId.addEventListener("input", update);
  prev.addEventListener("click", function () { page -= 1; render(); window.scrollTo(0, cards.offsetTop - 120); });
  next.addEventListener("click", function () { page += 1; render(); window.scrollTo(0, cards.offsetTop - 120); });

  var pub = $("show-published");
  if (pub) {
    var sync = function () { document.body.classList.toggle("hide-published", !pub.checked); };
    pub.addEventListener("change", sync);
    sync();
  }
  // The contents bar: a link to a folded part (or into one) opens it first, then scrolls.
  var unfold = function (id) {
    var el = id && document.getElementById(id);
    var d = el && (el.tagName === "DETAILS" ? el : el.closest("details"));
    if (d) { d.open = true; }
    return el;
  };
  document.addEventListener("click", function (e) {
    var a = e.target.closest && e.target.closest('a[href^="#"]');
    if (a) { unfold(decodeURIComponent(a.getAttribute("href").slice(1))); }
  });
  var target = unfold(decodeURIComponent(location.hash.slice(1)));
  if (target) { target.scrollIntoView(); }
  update(true);
}());

// yari-zero run page: polls /api/run (2 s) and /api/games (10 s).
(function () {
  "use strict";

  var $ = function (id) { return document.getElementById(id); };
  var COLORS = ["#1f6fd1", "#d1481f", "#2b9a3e", "#9b3fc4", "#c99a06", "#0f9aa8", "#c2185b", "#5d4037"];
  var lastRunKey = { loss: null, rating: null, gates: null, ckpt: null };
  var lastGames = null, lastGamesKey = null;

  function esc(s) {
    return String(s == null ? "" : s).replace(/[&<>"']/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c];
    });
  }
  function num(v, digits) {
    if (v == null || typeof v !== "number" || !isFinite(v)) return "—";
    return v.toFixed(digits == null ? 2 : digits);
  }
  function hms(s) {
    if (s == null || !isFinite(s)) return "—";
    s = Math.max(0, Math.round(s));
    var h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), sec = s % 60;
    return h + ":" + (m < 10 ? "0" : "") + m + ":" + (sec < 10 ? "0" : "") + sec;
  }
  function setText(id, t) { var e = $(id); if (e.textContent !== String(t)) e.textContent = t; }
  function showMessage(m) { setText("message", m || ""); }

  // ------------------------------------------------------------ chart helpers
  function niceStep(range, n) {
    if (!(range > 0)) return 1;
    var raw = range / Math.max(1, n);
    var p = Math.pow(10, Math.floor(Math.log10(raw)));
    var f = raw / p;
    return (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * p;
  }
  function ticks(min, max, n, integer) {
    var step = niceStep(max - min, n);
    if (integer) step = Math.max(1, Math.round(step));
    var out = [], start = Math.ceil(min / step - 1e-9) * step;
    for (var v = start; v <= max + step * 1e-6; v += step) out.push(Math.abs(v) < step * 1e-9 ? 0 : v);
    return { list: out, step: step };
  }
  function fmtTick(v, step) {
    if (step >= 1 || v === 0) return String(Math.round(v * 1000) / 1000);
    var d = Math.min(6, Math.max(0, -Math.floor(Math.log10(step))));
    return v.toFixed(d);
  }

  // frame: {W,H,L,R,T,B, xmin,xmax,ymin,ymax, xLabel,yLabel, integerX}
  function axes(fr) {
    var out = "";
    var pw = fr.W - fr.L - fr.R, ph = fr.H - fr.T - fr.B;
    fr.sx = function (x) { return fr.L + (fr.xmax === fr.xmin ? pw / 2 : (x - fr.xmin) / (fr.xmax - fr.xmin) * pw); };
    fr.sy = function (y) { return fr.T + ph - (fr.ymax === fr.ymin ? ph / 2 : (y - fr.ymin) / (fr.ymax - fr.ymin) * ph); };
    var yt = ticks(fr.ymin, fr.ymax, 6, false);
    yt.list.forEach(function (v) {
      var y = fr.sy(v).toFixed(1);
      out += '<line class="gridline" x1="' + fr.L + '" x2="' + (fr.W - fr.R) + '" y1="' + y + '" y2="' + y + '"/>';
      out += '<text x="' + (fr.L - 5) + '" y="' + y + '" text-anchor="end" dominant-baseline="central">' + fmtTick(v, yt.step) + "</text>";
    });
    var xt = ticks(fr.xmin, fr.xmax, 8, fr.integerX);
    xt.list.forEach(function (v) {
      var x = fr.sx(v).toFixed(1);
      out += '<line class="axis-tick" stroke="#888" x1="' + x + '" x2="' + x + '" y1="' + (fr.H - fr.B) + '" y2="' + (fr.H - fr.B + 4) + '"/>';
      out += '<text x="' + x + '" y="' + (fr.H - fr.B + 15) + '" text-anchor="middle">' + fmtTick(v, xt.step) + "</text>";
    });
    out += '<g class="axis"><path fill="none" d="M' + fr.L + " " + fr.T + "V" + (fr.H - fr.B) + "H" + (fr.W - fr.R) + '"/></g>';
    if (fr.xLabel) out += '<text x="' + (fr.L + pw / 2) + '" y="' + (fr.H - 3) + '" text-anchor="middle">' + esc(fr.xLabel) + "</text>";
    if (fr.yLabel) out += '<text transform="translate(12 ' + (fr.T + ph / 2) + ') rotate(-90)" text-anchor="middle">' + esc(fr.yLabel) + "</text>";
    return out;
  }

  function legend(items, fr) {
    var out = '<g class="legend">', x = fr.L, y = 12;
    items.forEach(function (it) {
      var w = 22 + it.name.length * 6.4 + 14;
      if (x + w > fr.W - fr.R && x > fr.L) { x = fr.L; y += 15; }
      out += '<rect x="' + x + '" y="' + (y - 5) + '" width="14" height="10" rx="2" fill="' + it.color + '"/>';
      out += '<text x="' + (x + 18) + '" y="' + y + '" dominant-baseline="central">' + esc(it.name) + "</text>";
      x += w;
    });
    return { svg: out + "</g>", height: y + 10 };
  }

  function emptyChart(svg, text) {
    svg.innerHTML = '<text class="empty" x="300" y="160" text-anchor="middle">' + esc(text) + "</text>";
  }

  // ------------------------------------------------------------ loss chart
  function drawLoss(run) {
    var svg = $("loss-chart");
    var metrics = run.metrics || [];
    var usingSteps = metrics.length > 0;
    var rows = usingSteps ? metrics : (run.summary || []);
    var xkey = usingSteps ? "step" : "generation";
    var defs = [["loss", "total loss"], ["policy_loss", "policy loss"], ["value_loss", "value loss"]];
    var series = [];
    defs.forEach(function (d, i) {
      var pts = [];
      rows.forEach(function (r) {
        var x = r[xkey], y = r[d[0]];
        if (typeof x === "number" && typeof y === "number" && isFinite(y)) pts.push([x, y]);
      });
      if (pts.length) series.push({ name: d[1], color: COLORS[i], points: pts });
    });
    var key = JSON.stringify([xkey, series]);
    if (key === lastRunKey.loss) return;
    lastRunKey.loss = key;
    if (!series.length) { emptyChart(svg, "no training data yet"); return; }
    var xs = [], ys = [];
    series.forEach(function (s) { s.points.forEach(function (p) { xs.push(p[0]); ys.push(p[1]); }); });
    var fr = { W: 600, H: 320, L: 50, R: 14, T: 30, B: 36, xLabel: usingSteps ? "training step" : "generation", yLabel: "loss", integerX: true };
    var lg = legend(series, fr);
    fr.T = lg.height + 8;
    fr.xmin = Math.min.apply(null, xs); fr.xmax = Math.max.apply(null, xs);
    var ymin = Math.min.apply(null, ys), ymax = Math.max.apply(null, ys);
    var pad = (ymax - ymin) * 0.06 || Math.abs(ymax) * 0.1 || 1;
    fr.ymin = Math.max(0, ymin - pad); fr.ymax = ymax + pad;
    if (fr.xmin === fr.xmax) { fr.xmin -= 1; fr.xmax += 1; }
    var out = axes(fr);
    series.forEach(function (s) {
      var d = s.points.map(function (p, i) { return (i ? "L" : "M") + fr.sx(p[0]).toFixed(1) + " " + fr.sy(p[1]).toFixed(1); }).join("");
      out += '<path class="series" stroke="' + s.color + '" d="' + d + '"><title>' + esc(s.name) + "</title></path>";
      if (s.points.length <= 40) {
        s.points.forEach(function (p) {
          out += '<circle cx="' + fr.sx(p[0]).toFixed(1) + '" cy="' + fr.sy(p[1]).toFixed(1) + '" r="2.5" fill="' + s.color + '"><title>' +
            esc(s.name) + " @ " + p[0] + ": " + p[1].toFixed(4) + "</title></circle>";
        });
      }
    });
    svg.innerHTML = out + lg.svg;
  }

  // ------------------------------------------------------------ rating chart
  function drawRatings(run) {
    var svg = $("rating-chart");
    var ratings = run.ratings && run.ratings.length ? run.ratings : [];
    if (!ratings.length) (run.summary || []).forEach(function (s) { (s.ratings || []).forEach(function (r) { ratings.push(r); }); });
    var key = JSON.stringify(ratings);
    if (key === lastRunKey.rating) return;
    lastRunKey.rating = key;
    var ok = ratings.filter(function (r) { return typeof r.generation === "number"; });
    if (!ok.length) { emptyChart(svg, "no ratings yet"); return; }
    var opps = [];
    ok.forEach(function (r) { if (opps.indexOf(r.opponent) < 0) opps.push(r.opponent); });
    var items = opps.map(function (o, i) { return { name: String(o), color: COLORS[i % COLORS.length] }; });
    var fr = { W: 600, H: 320, L: 50, R: 14, T: 30, B: 36, xLabel: "generation", yLabel: "Elo", integerX: true };
    var lg = legend(items, fr);
    fr.T = lg.height + 14;
    var gens = ok.map(function (r) { return r.generation; });
    fr.xmin = Math.min.apply(null, gens) - 0.5; fr.xmax = Math.max.apply(null, gens) + 0.5;
    var ys = [0];
    ok.forEach(function (r) {
      if (typeof r.elo === "number") ys.push(r.elo);
      if (typeof r.elo_low === "number" && isFinite(r.elo_low)) ys.push(r.elo_low);
      if (typeof r.elo_high === "number" && isFinite(r.elo_high)) ys.push(r.elo_high);
    });
    var ymin = Math.min.apply(null, ys), ymax = Math.max.apply(null, ys);
    var pad = (ymax - ymin) * 0.08 || 50;
    fr.ymin = ymin - pad; fr.ymax = ymax + pad;
    var out = axes(fr);
    out += '<line class="zero" x1="' + fr.L + '" x2="' + (fr.W - fr.R) + '" y1="' + fr.sy(0).toFixed(1) + '" y2="' + fr.sy(0).toFixed(1) + '"/>';
    var n = opps.length, spread = Math.min(0.3, 0.6 / Math.max(1, n));
    var top = fr.T - 6, bottom = fr.H - fr.B + 0;
    opps.forEach(function (o, i) {
      var color = items[i].color;
      var off = (i - (n - 1) / 2) * spread;
      var pts = ok.filter(function (r) { return r.opponent === o; }).sort(function (a, b) { return a.generation - b.generation; });
      var line = "";
      pts.forEach(function (r) {
        var x = fr.sx(r.generation + off);
        var tip = "gen " + r.generation + " vs " + o + ": +" + (r.wins || 0) + " =" + (r.draws || 0) + " -" + (r.losses || 0) +
          " (score " + num(r.score, 3) + ")" + (typeof r.elo === "number" ? ", Elo " + r.elo.toFixed(0) : "") +
          (typeof r.elo_low === "number" && typeof r.elo_high === "number" ? " [" + r.elo_low.toFixed(0) + ", " + r.elo_high.toFixed(0) + "]" : "");
        if (typeof r.elo === "number" && isFinite(r.elo)) {
          var y = fr.sy(r.elo);
          line += (line ? "L" : "M") + x.toFixed(1) + " " + y.toFixed(1);
          var lo = typeof r.elo_low === "number" && isFinite(r.elo_low) ? fr.sy(r.elo_low) : null;
          var hi = typeof r.elo_high === "number" && isFinite(r.elo_high) ? fr.sy(r.elo_high) : null;
          if (lo != null || hi != null) {
            var y1 = hi != null ? hi : top, y2 = lo != null ? lo : bottom;
            out += '<line stroke="' + color + '" stroke-width="1.3" x1="' + x.toFixed(1) + '" x2="' + x.toFixed(1) + '" y1="' + y1.toFixed(1) + '" y2="' + y2.toFixed(1) + '"/>';
            if (hi != null) out += '<line stroke="' + color + '" x1="' + (x - 4).toFixed(1) + '" x2="' + (x + 4).toFixed(1) + '" y1="' + hi.toFixed(1) + '" y2="' + hi.toFixed(1) + '"/>';
            if (lo != null) out += '<line stroke="' + color + '" x1="' + (x - 4).toFixed(1) + '" x2="' + (x + 4).toFixed(1) + '" y1="' + lo.toFixed(1) + '" y2="' + lo.toFixed(1) + '"/>';
          }
          out += '<circle cx="' + x.toFixed(1) + '" cy="' + y.toFixed(1) + '" r="4" fill="' + color + '" stroke="#fff"><title>' + esc(tip) + "</title></circle>";
        } else {
          // elo unknown: 100% (top edge, up triangle) or 0% (bottom edge, down triangle)
          var best = (r.score != null ? r.score : 0.5) >= 0.5;
          var ye = best ? fr.T : fr.H - fr.B;
          var tri = best
            ? "M" + x.toFixed(1) + " " + (ye - 7).toFixed(1) + "l6 10h-12z"
            : "M" + x.toFixed(1) + " " + (ye + 7).toFixed(1) + "l6 -10h-12z";
          out += '<path class="edge-marker" d="' + tri + '" fill="' + color + '" stroke="#fff"><title>' + esc(tip + (best ? " — 100%" : " — 0%")) + "</title></path>";
        }
      });
      if (line.indexOf("L") >= 0) out += '<path class="series" stroke="' + color + '" stroke-opacity=".55" d="' + line + '"/>';
    });
    svg.innerHTML = out + lg.svg;
  }

  // ------------------------------------------------------------ tables
  function modelName(path) {
    if (!path) return "—";
    var m = String(path).split("/").pop();
    return m.replace(/\.yari$/, "");
  }

  function drawGates(run) {
    var rows = (run.summary || []).slice().sort(function (a, b) { return b.generation - a.generation; });
    var key = JSON.stringify(rows);
    if (key === lastRunKey.gates) return;
    lastRunKey.gates = key;
    var html = rows.map(function (s) {
      var prom = s.promoted === true ? '<span class="yes">yes</span>' : s.promoted === false ? '<span class="no">no</span>' : "—";
      return "<tr><td class=\"num\">" + esc(s.generation) + "</td><td class=\"num\">" + esc(s.games == null ? "—" : s.games) +
        "</td><td class=\"num\">" + esc(s.positions == null ? "—" : s.positions) + "</td><td class=\"num\">" + num(s.gate_score, 3) +
        "</td><td class=\"num\">" + num(s.gate_elo, 0) + "</td><td>" + prom + "</td><td class=\"num\">" + num(s.loss, 3) +
        "</td><td class=\"num\">" + (typeof s.lr === "number" ? s.lr.toPrecision(3) : "—") + "</td></tr>";
    }).join("");
    $("gates").querySelector("tbody").innerHTML = html || '<tr><td colspan="8" class="muted">no generation finished yet</td></tr>';
  }

  function drawCheckpoints(run) {
    var list = run.checkpoints || [];
    var best = modelName(run.best);
    var key = JSON.stringify([list, best]);
    if (key === lastRunKey.ckpt) return;
    lastRunKey.ckpt = key;
    $("checkpoints").innerHTML = list.map(function (c) {
      return '<li' + (c === best ? ' class="best" title="current best"' : "") + '><a href="/?model=' + encodeURIComponent(c) + '">' +
        esc(c) + (c === best ? " ★" : "") + "</a></li>";
    }).join("") || '<li class="muted">none yet</li>';
  }

  function remainingText(run) {
    if (run.finished) return "finished";
    var parts = [];
    if (typeof run.generations === "number") {
      var done = 0;
      (run.summary || []).forEach(function (s) { if (typeof s.generation === "number" && s.generation > done) done = s.generation; });
      var left = Math.max(0, run.generations - done);
      parts.push(left + " of " + run.generations + " generations");
    }
    if (typeof run.max_hours === "number" && typeof run.elapsed_s === "number") {
      parts.push(hms(Math.max(0, run.max_hours * 3600 - run.elapsed_s)) + " of " + run.max_hours + " h");
    }
    return parts.length ? parts.join(" · ") : "no budget (runs until stopped)";
  }

  function rateText(run) {
    var s = run.summary || [];
    for (var i = s.length - 1; i >= 0; i--) {
      var r = s[i];
      if (r && r.selfplay_s > 0) {
        var g = (r.games || 0) / r.selfplay_s, p = (r.positions || 0) / r.selfplay_s;
        return g.toFixed(2) + " games/s · " + p.toFixed(1) + " pos/s (gen " + r.generation + ")";
      }
    }
    return "—";
  }

  function drawRun(run) {
    setText("run-dir", run.run_dir || "");
    setText("run-name", run.name || "—");
    setText("generation", run.generation == null ? "—" : String(run.generation));
    setText("phase", run.finished ? "finished" : (run.phase || "—"));
    setText("best", run.best ? modelName(run.best) : "—");
    setText("elapsed", hms(run.elapsed_s));
    setText("remaining", remainingText(run));
    setText("rate", rateText(run));
    drawLoss(run);
    drawRatings(run);
    drawGates(run);
    drawCheckpoints(run);
    document.title = "yari-zero · run " + (run.name || "") + " · gen " + (run.generation == null ? "?" : run.generation);
  }

  // ------------------------------------------------------------ games
  function drawGames() {
    if (!lastGames) return;
    var kind = $("games-kind").value;
    var games = lastGames.map(function (g, i) { return { g: g, i: i }; });
    games.sort(function (a, b) {
      var ga = typeof a.g.generation === "number" ? a.g.generation : -1;
      var gb = typeof b.g.generation === "number" ? b.g.generation : -1;
      return gb - ga || b.i - a.i;
    });
    var filtered = games.filter(function (x) { return !kind || x.g.kind === kind; });
    var shown = filtered.slice(0, 200);
    var key = JSON.stringify([kind, shown.map(function (x) { return x.g; })]);
    if (key === lastGamesKey) return;
    lastGamesKey = key;
    $("games").querySelector("tbody").innerHTML = shown.map(function (x) {
      var g = x.g;
      return '<tr><td><a href="/game?id=' + encodeURIComponent(g.id) + '">' + esc(g.id) + "</a></td><td>" + esc(g.kind) +
        '</td><td class="num">' + esc(g.generation == null ? "—" : g.generation) + "</td><td>" + esc(g.white) + "</td><td>" + esc(g.black) +
        "</td><td>" + esc(g.result) + "</td><td>" + esc(g.reason) + '</td><td class="num">' + esc(g.plies) + "</td></tr>";
    }).join("") || '<tr><td colspan="8" class="muted">no games yet</td></tr>';
    setText("games-count", filtered.length > 200 ? "newest 200 of " + filtered.length : filtered.length + " games");
  }

  // ------------------------------------------------------------ polling
  var runError = "", gamesError = "";
  function updateMessage() { showMessage(runError || gamesError); }
  function pollRun() {
    yariApi("GET", "/api/run").then(function (run) {
      runError = "";
      updateMessage();
      drawRun(run);
    }, function (err) {
      runError = err.message;
      updateMessage();
    }).then(function () {
      setTimeout(pollRun, 2000);
    });
  }
  function pollGames() {
    yariApi("GET", "/api/games").then(function (r) {
      gamesError = "";
      updateMessage();
      lastGames = r.games || [];
      drawGames();
    }, function (err) {
      gamesError = "games: " + err.message;
      updateMessage();
    }).then(function () {
      setTimeout(pollGames, 10000);
    });
  }
  $("games-kind").addEventListener("change", drawGames);
  pollRun();
  pollGames();
})();

// yari-zero game viewer: /game?id=ID
(function () {
  "use strict";

  var $ = function (id) { return document.getElementById(id); };
  var svg = $("board");
  var state = { game: null, k: 0, flipped: false, cache: {}, pending: 0, shown: null, startSide: "white" };

  function esc(s) {
    return String(s == null ? "" : s).replace(/[&<>"']/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c];
    });
  }
  function showMessage(m) { $("message").textContent = m || ""; }
  function setBusy(d) {
    state.pending = Math.max(0, state.pending + d);
    document.body.setAttribute("data-busy", state.pending > 0 ? "true" : "false");
  }
  function sideAt(k) {
    return k % 2 === 0 ? state.startSide : (state.startSide === "white" ? "black" : "white");
  }
  function cap(s) { return s.charAt(0).toUpperCase() + s.slice(1); }
  function signed(v, d) { return (v >= 0 ? "+" : "−") + Math.abs(v).toFixed(d == null ? 2 : d); }

  function positionAt(k) {
    if (!state.cache[k]) {
      var g = state.game;
      setBusy(+1);
      state.cache[k] = yariApi("POST", "/api/position", { fen: g.start_fen, moves: g.moves.slice(0, k) });
      state.cache[k].then(function () { setBusy(-1); }, function () { setBusy(-1); delete state.cache[k]; });
    }
    return state.cache[k];
  }

  function drawBoard(pos) {
    var g = state.game, k = state.k;
    var arrows = [];
    var ann = g.annotations && g.annotations[k];
    if (ann && ann.policy && ann.policy.length) {
      var top = ann.policy.slice().sort(function (a, b) { return b[1] - a[1]; })[0];
      if (top && top[0] !== g.moves[k]) arrows.push({ move: top[0], opacity: 0.45 });
    }
    if (k < g.moves.length) arrows.push({ move: g.moves[k], cls: "played", opacity: 0.55, width: 5 });
    renderBoard(svg, pos, {
      flipped: state.flipped,
      lastMove: pos.last_move,
      check: pos.check ? pos.king : null,
      arrows: arrows
    });
    ["white", "black"].forEach(function (c) {
      renderHand($("hand-" + c), c, pos.hands ? pos.hands[c] : {}, { active: false, flipped: state.flipped });
    });
    document.querySelector(".board-area").classList.toggle("flipped", state.flipped);
    var st = $("status");
    st.classList.toggle("over", !!pos.outcome);
    if (pos.outcome) st.textContent = pos.outcome.text || pos.outcome.result;
    else if (k === g.moves.length && g.result) st.textContent = "Game ended: " + g.result + (g.reason ? " (" + g.reason + ")" : "");
    else st.textContent = cap(pos.side) + " to move" + (pos.check ? " — check!" : "");
  }

  function show(k) {
    var g = state.game;
    if (!g) return;
    k = Math.max(0, Math.min(g.moves.length, k));
    state.k = k;
    $("ply").textContent = k + " / " + g.moves.length;
    $("first").disabled = $("prev").disabled = k === 0;
    $("next").disabled = $("last").disabled = k === g.moves.length;
    // move list highlight (the move that led to this position)
    var lis = $("movelist").children;
    for (var i = 0; i < lis.length; i++) lis[i].classList.toggle("current", i === k - 1);
    var cur = lis[k - 1];
    if (k === 0) $("movelist").scrollTop = 0;
    if (cur && cur.scrollIntoView) {
      var ol = $("movelist");
      if (cur.offsetTop < ol.scrollTop || cur.offsetTop > ol.scrollTop + ol.clientHeight - 20) ol.scrollTop = cur.offsetTop - ol.clientHeight / 2;
    }
    drawValue(k);
    drawPolicy(k);
    positionAt(k).then(function (pos) {
      if (state.k !== k) return;
      showMessage("");
      state.shown = pos;
      drawBoard(pos);
    }, function (err) {
      if (state.k !== k) return;
      showMessage(err.message);
    });
    // prefetch neighbours
    if (k + 1 <= g.moves.length) positionAt(k + 1).catch(function () {});
  }

  function drawValue(k) {
    var g = state.game;
    var ann = g.annotations && g.annotations[k];
    var side = sideAt(k);
    var fill = $("value-fill");
    var extra = "";
    if (g.move_ms && typeof g.move_ms[k] === "number") extra = " · search time " + Math.round(g.move_ms[k]) + " ms";
    if (!ann || typeof ann.value !== "number") {
      $("value").textContent = (k === g.moves.length ? "final position" : "no value recorded") + extra;
      fill.style.width = "50%";
      return;
    }
    var v = ann.value, vw = side === "white" ? v : -v;
    $("value").textContent = signed(v) + " for " + cap(side) + " (to move) · " + signed(vw) + " from White's view" + extra;
    fill.style.width = ((vw + 1) / 2 * 100).toFixed(1) + "%";
  }

  function drawPolicy(k) {
    var g = state.game;
    var ann = g.annotations && g.annotations[k];
    var tb = $("policy").querySelector("tbody");
    if (!ann || !ann.policy || !ann.policy.length) {
      tb.innerHTML = '<tr><td colspan="3" class="muted">' + (k === g.moves.length ? "final position" : "no policy recorded") + "</td></tr>";
      return;
    }
    var played = g.moves[k];
    var rows = ann.policy.slice().sort(function (a, b) { return b[1] - a[1]; }).slice(0, 8);
    var html = rows.map(function (p) {
      var pct = p[1] * 100;
      return '<tr' + (p[0] === played ? ' class="played" title="played"' : "") + '><td class="mono">' + esc(p[0]) + (p[0] === played ? " ✓" : "") +
        '</td><td class="num">' + pct.toFixed(1) + '%</td><td style="width:45%"><div style="height:8px;border-radius:4px;background:#c9974d;width:' +
        Math.min(100, pct).toFixed(1) + '%"></div></td></tr>';
    }).join("");
    if (played && !rows.some(function (p) { return p[0] === played; })) {
      var hit = ann.policy.filter(function (p) { return p[0] === played; })[0];
      html += '<tr class="played"><td class="mono">' + esc(played) + ' ✓</td><td class="num">' + (hit ? (hit[1] * 100).toFixed(1) + "%" : "—") + "</td><td></td></tr>";
    }
    tb.innerHTML = html;
  }

  function buildMoveList() {
    var g = state.game;
    var fi = yariFenInfo(g.start_fen);
    var side = fi.side, no = fi.fullmove;
    $("movelist").innerHTML = g.moves.map(function (m, i) {
      var w = side === "white";
      var li = '<li class="' + (w ? "w" : "b") + '" data-ply="' + (i + 1) + '"><span class="no">' + (w ? no + "." : no + "…") + "</span>" + esc(m) + "</li>";
      if (!w) no++;
      side = w ? "black" : "white";
      return li;
    }).join("");
  }

  $("movelist").addEventListener("click", function (ev) {
    var li = ev.target.closest ? ev.target.closest("li") : null;
    if (li) show(parseInt(li.getAttribute("data-ply"), 10));
  });
  $("first").addEventListener("click", function () { show(0); });
  $("prev").addEventListener("click", function () { show(state.k - 1); });
  $("next").addEventListener("click", function () { show(state.k + 1); });
  $("last").addEventListener("click", function () { if (state.game) show(state.game.moves.length); });
  $("flip").addEventListener("click", function () {
    state.flipped = !state.flipped;
    if (state.shown) drawBoard(state.shown);
  });
  document.addEventListener("keydown", function (ev) {
    if (!state.game || ev.target.tagName === "INPUT" || ev.target.tagName === "TEXTAREA" || ev.target.tagName === "SELECT") return;
    var k = state.k;
    if (ev.key === "ArrowLeft") k--;
    else if (ev.key === "ArrowRight") k++;
    else if (ev.key === "Home" || ev.key === "ArrowUp") k = 0;
    else if (ev.key === "End" || ev.key === "ArrowDown") k = state.game.moves.length;
    else if (ev.key === "f") { $("flip").click(); return; }
    else return;
    ev.preventDefault();
    show(k);
  });

  function start() {
    var q = new URLSearchParams(location.search);
    var id = q.get("id");
    if (!id) { showMessage("no game id given (use /game?id=...)"); $("game-title").textContent = "no game"; return; }
    $("game-id").textContent = id;
    $("download-pgn").href = "/api/pgn?id=" + encodeURIComponent(id);
    $("download-pgn").setAttribute("download", id.replace(/[^A-Za-z0-9._-]+/g, "_") + ".pgn");
    setBusy(+1);
    yariApi("GET", "/api/game?id=" + encodeURIComponent(id)).then(function (g) {
      g.moves = g.moves || [];
      state.game = g;
      state.startSide = yariFenInfo(g.start_fen).side;
      var title = (g.white || "?") + " vs " + (g.black || "?") + " — " + (g.result || "*") + (g.reason ? " (" + g.reason + ")" : "");
      $("game-title").textContent = title;
      $("game-title").title = (g.kind || "") + " game " + g.id;
      document.title = "yari-zero · " + title;
      buildMoveList();
      var ply = parseInt(q.get("ply"), 10);
      show(isFinite(ply) ? ply : 0);
    }, function (err) {
      showMessage(err.message);
      $("game-title").textContent = "game not available";
    }).then(function () { setBusy(-1); });
  }
  start();
})();

// yari-zero play page
(function () {
  "use strict";

  var $ = function (id) { return document.getElementById(id); };
  var svg = $("board");

  var state = {
    info: null,
    startFen: null,        // string from the server's start_fen (null before the first reply)
    moves: [],
    position: null,
    selected: null,        // "d3" or "P@" (hand selection)
    flipped: false,
    busy: 0,
    thinking: false,       // engine search in flight (play or analyse)
    gen: 0,                // bumped on new game / undo / load: stale replies are dropped
    thinkAbort: null,
    pendingPromotion: null,
    analysis: null,        // last think reply shown in eval/pv
    arrows: []
  };

  // ------------------------------------------------------------ helpers
  function setBusy(delta) {
    state.busy = Math.max(0, state.busy + delta);
    document.body.setAttribute("data-busy", state.busy > 0 ? "true" : "false");
    updateButtons();
  }

  function showMessage(msg) { $("message").textContent = msg || ""; }
  function showNotice(msg) {
    $("notice").textContent = msg || "";
    if (msg) {
      var stamp = ++showNotice.n;
      setTimeout(function () { if (showNotice.n === stamp) $("notice").textContent = ""; }, 3000);
    }
  }
  showNotice.n = 0;

  function engineSide() { return $("engine-side").value; }
  function isEngineTurn() {
    var p = state.position;
    return !!p && !p.outcome && engineSide() !== "none" && p.side === engineSide();
  }
  function isHumanTurn() {
    var p = state.position;
    return !!p && !p.outcome && (engineSide() === "none" || p.side !== engineSide());
  }

  function pieceAt(sq) {
    var p = state.position;
    if (!p) return "";
    var f = "abcdefg".indexOf(sq.charAt(0)), r = parseInt(sq.slice(1), 10);
    var row = p.board[9 - r];
    return (row && row[f]) || "";
  }
  function colorOf(piece) {
    if (!piece) return null;
    var l = piece.replace("+", "");
    return l === l.toUpperCase() ? "white" : "black";
  }

  function legalFrom(sel) {
    var p = state.position;
    if (!p || !sel) return [];
    return (p.legal || []).filter(function (m) {
      if (sel.charAt(1) === "@") return m.charAt(1) === "@" && m.charAt(0).toUpperCase() === sel.charAt(0);
      return m.charAt(1) !== "@" && m.slice(0, 2) === sel;
    });
  }
  function targetsOf(sel) {
    var seen = {}, out = [];
    legalFrom(sel).forEach(function (m) {
      var to = m.charAt(1) === "@" ? m.slice(2, 4) : m.slice(2, 4);
      if (!seen[to]) { seen[to] = true; out.push(to); }
    });
    return out;
  }

  function thinkParams() {
    var info = state.info || {};
    var kind = $("strength-kind").value;
    var v = parseInt($("strength").value, 10);
    if (!(v > 0)) v = kind === "nodes" ? 200 : 1000;
    if (kind === "nodes" && info.max_nodes) v = Math.min(v, info.max_nodes);
    if (kind === "movetime" && info.max_movetime_ms) v = Math.min(v, info.max_movetime_ms);
    var t = parseInt($("threads").value, 10);
    if (!(t > 0)) t = 1;
    if (info.max_threads) t = Math.min(t, info.max_threads);
    var model = $("model").value || null;
    return {
      nodes: kind === "nodes" ? v : null,
      movetime_ms: kind === "movetime" ? v : null,
      threads: t,
      model: model
    };
  }

  // ------------------------------------------------------------ rendering
  function render() {
    var p = state.position;
    var humanTurn = isHumanTurn() && !state.busy;
    var targets = state.selected ? targetsOf(state.selected) : [];
    renderBoard(svg, p, {
      flipped: state.flipped,
      selected: state.selected,
      targets: targets,
      lastMove: p ? p.last_move : null,
      check: p && p.check ? p.king : null,
      arrows: state.arrows,
      onSquare: onSquare,
      onHand: onHand
    });
    if (p) {
      ["white", "black"].forEach(function (c) {
        renderHand($("hand-" + c), c, p.hands ? p.hands[c] : {}, {
          active: humanTurn && p.side === c,
          selected: p.side === c ? state.selected : null,
          flipped: state.flipped,
          onHand: onHand
        });
      });
    }
    var area = document.querySelector(".board-area");
    area.classList.toggle("flipped", state.flipped);
    $("eval-bar").classList.toggle("flipped", state.flipped);
    renderStatus();
    renderMoveList();
    updateButtons();
  }

  function renderStatus() {
    var p = state.position, st = $("status");
    st.classList.remove("over", "thinking");
    if (!p) { st.textContent = "loading…"; return; }
    if (p.outcome) {
      st.textContent = p.outcome.text || (p.outcome.result + " (" + p.outcome.reason + ")");
      st.classList.add("over");
      return;
    }
    if (state.thinking) {
      st.textContent = "thinking…";
      st.classList.add("thinking");
      return;
    }
    var side = p.side === "white" ? "White" : "Black";
    var who = engineSide() === "none" ? "" : (p.side === engineSide() ? " (engine)" : " (you)");
    st.textContent = side + " to move" + who + (p.check ? " — check!" : "");
  }

  function renderMoveList() {
    var ol = $("movelist");
    var p = state.position;
    var html = "";
    if (p) {
      var fi = yariFenInfo(p.start_fen);
      var side = fi.side, no = fi.fullmove;
      (p.moves || []).forEach(function (m, i) {
        var w = side === "white";
        var label = w ? no + "." : no + "…";
        html += '<li class="' + (w ? "w" : "b") + (i === p.moves.length - 1 ? " current" : "") + '" data-ply="' + (i + 1) + '">' +
          '<span class="no">' + label + "</span>" + m + "</li>";
        if (!w) no++;
        side = w ? "black" : "white";
      });
    }
    ol.innerHTML = html;
    ol.scrollTop = ol.scrollHeight;
  }

  function updateButtons() {
    var p = state.position;
    $("undo").disabled = !p || !(p.moves && p.moves.length);
    $("analyse").disabled = !p || state.thinking;
    $("copy-pgn").disabled = !p;
    $("copy-fen").disabled = !p;
  }

  function whiteShare(wdl, side) {
    if (!wdl || wdl.length !== 3) return null;
    var tot = wdl[0] + wdl[1] + wdl[2];
    if (!(tot > 0)) return null;
    var s = (wdl[0] + wdl[1] / 2) / tot;
    return side === "white" ? s : 1 - s;
  }

  // reply: think reply; side: the side that was to move when searching
  function showAnalysis(reply, side, fen) {
    state.analysis = reply;
    var fill = $("eval-bar").querySelector(".fill");
    if (!reply) {
      fill.style.height = "50%";
      $("eval-bar").removeAttribute("data-white-share");
      $("eval-text").textContent = "—";
      $("pv").textContent = "";
      $("search-info").textContent = "";
      return;
    }
    var share = whiteShare(reply.wdl, side);
    if (share != null) {
      fill.style.height = (share * 100).toFixed(1) + "%";
      $("eval-bar").setAttribute("data-white-share", share.toFixed(3));
      $("eval-bar").title = "White's expected score: " + (share * 100).toFixed(1) + "%";
    }
    var txt;
    var other = side === "white" ? "Black" : "White", me = side === "white" ? "White" : "Black";
    if (reply.mate != null && reply.mate !== 0) {
      txt = "mate in " + Math.abs(reply.mate) + " (" + (reply.mate > 0 ? me : other) + ")";
    } else {
      var cp = typeof reply.cp === "number" ? reply.cp : 0;
      if (side === "black") cp = -cp;
      txt = (cp >= 0 ? "+" : "−") + (Math.abs(cp) / 100).toFixed(2);
    }
    if (reply.wdl && reply.wdl.length === 3) {
      var w = reply.wdl[0], d = reply.wdl[1], l = reply.wdl[2];
      if (side === "black") { var t = w; w = l; l = t; }
      txt += " (W " + Math.round(w / 10) + "% D " + Math.round(d / 10) + "% L " + Math.round(l / 10) + "%)";
    }
    $("eval-text").textContent = txt;
    // principal variation with move numbers
    var fi = yariFenInfo(fen);
    var s = fi.side, no = fi.fullmove, parts = [];
    (reply.pv || []).forEach(function (m, i) {
      if (s === "white") parts.push(no + ". " + m);
      else parts.push((i === 0 ? no + "… " : "") + m);
      if (s === "black") no++;
      s = s === "white" ? "black" : "white";
    });
    $("pv").textContent = parts.length ? "PV: " + parts.join(" ") : (reply.bestmove ? "best: " + reply.bestmove : "no move");
    var info = [];
    if (reply.nodes != null) info.push(reply.nodes + " nodes");
    if (reply.nps) info.push(Math.round(reply.nps) + " n/s");
    if (reply.elapsed_ms != null) info.push((reply.elapsed_ms / 1000).toFixed(2) + " s");
    $("search-info").textContent = info.join(" · ");
  }

  // ------------------------------------------------------------ interaction
  function onSquare(sq) {
    var p = state.position;
    if (!p || state.busy || !isHumanTurn()) { if (state.selected) { state.selected = null; render(); } return; }
    var piece = pieceAt(sq);
    if (state.selected) {
      if (state.selected === sq) { state.selected = null; render(); return; }
      var cands = legalFrom(state.selected).filter(function (m) { return m.slice(2, 4) === sq; });
      if (cands.length) {
        var plain = null, promo = null;
        cands.forEach(function (m) { if (m.charAt(4) === "+") promo = m; else plain = m; });
        if (plain && promo) { askPromotion(plain, promo); return; }
        state.selected = null;
        playMove(plain || promo);
        return;
      }
      if (piece && colorOf(piece) === p.side) { state.selected = sq; render(); return; }
      state.selected = null;
      render();
      return;
    }
    if (piece && colorOf(piece) === p.side) { state.selected = sq; render(); }
  }

  function onHand(color, role) {
    var p = state.position;
    if (!p || state.busy || !isHumanTurn() || color !== p.side) return;
    if (!(p.hands && p.hands[color] && p.hands[color][role] > 0)) return;
    var key = role + "@";
    state.selected = state.selected === key ? null : key;
    render();
  }

  function askPromotion(plain, promo) {
    state.pendingPromotion = { plain: plain, promo: promo };
    var from = plain.slice(0, 2);
    var piece = pieceAt(from);
    var base = piece.replace("+", "");
    var prom = "+" + base;
    document.querySelector("#promote-yes .icon").innerHTML = yariPieceSVG(prom, 44, state.flipped);
    document.querySelector("#promote-no .icon").innerHTML = yariPieceSVG(base, 44, state.flipped);
    $("promotion").hidden = false;
  }
  function resolvePromotion(yes) {
    var pp = state.pendingPromotion;
    state.pendingPromotion = null;
    $("promotion").hidden = true;
    if (!pp) return;
    state.selected = null;
    playMove(yes ? pp.promo : pp.plain);
  }

  function positionRequest(fen, moves) {
    return yariApi("POST", "/api/position", { fen: fen, moves: moves });
  }

  function setPosition(pos) {
    state.position = pos;
    state.startFen = pos.start_fen;
    state.moves = (pos.moves || []).slice();
    state.selected = null;
  }

  // Play a move (from the UI or forged through window.yariPlayMove).
  function playMove(mv) {
    var gen = state.gen;
    setBusy(+1);
    state.arrows = [];
    var moves = state.moves.concat([mv]);
    return positionRequest(state.startFen, moves).then(function (pos) {
      if (gen !== state.gen) return;
      showMessage("");
      setPosition(pos);
      render();
      return maybeEngineMove();
    }, function (err) {
      if (gen !== state.gen) return;
      showMessage(err.message);
      state.selected = null;
    }).then(function () {
      setBusy(-1);
      render();
    });
  }

  // Ask the engine to move if it is its turn. Returns a promise.
  function maybeEngineMove() {
    if (!isEngineTurn()) return Promise.resolve();
    return think(true);
  }

  function think(play) {
    var p = state.position;
    if (!p) return Promise.resolve();
    var gen = state.gen;
    var side = p.side, fen = p.fen;
    var body = thinkParams();
    body.fen = state.startFen;
    body.moves = state.moves.slice();
    var ctrl = typeof AbortController !== "undefined" ? new AbortController() : null;
    state.thinkAbort = ctrl;
    state.thinking = true;
    setBusy(+1);
    render();
    return yariApi("POST", "/api/think", body, ctrl ? ctrl.signal : null).then(function (reply) {
      if (gen !== state.gen) return;
      showMessage("");
      showAnalysis(reply, side, fen);
      if (play) {
        state.arrows = [];
        if (reply.position) setPosition(reply.position);
      } else {
        state.arrows = reply.bestmove ? [{ move: reply.bestmove, opacity: 0.7 }] : [];
      }
    }, function (err) {
      if (gen !== state.gen || (err && err.name === "AbortError")) return;
      showMessage(err.message);
    }).then(function () {
      if (state.thinkAbort === ctrl) { state.thinkAbort = null; state.thinking = false; }
      setBusy(-1);
      render();
    });
  }

  function cancelThinking() {
    state.gen++;
    if (state.thinkAbort) { try { state.thinkAbort.abort(); } catch (e) { /* ignore */ } }
    state.thinkAbort = null;
    state.thinking = false;
    state.pendingPromotion = null;
    $("promotion").hidden = true;
  }

  // Load a position (fen, moves); on success replace the game, else keep it.
  function loadGame(fen, moves, opts) {
    opts = opts || {};
    cancelThinking();
    var gen = state.gen;
    setBusy(+1);
    return positionRequest(fen, moves).then(function (pos) {
      if (gen !== state.gen) return;
      showMessage("");
      setPosition(pos);
      state.arrows = [];
      if (opts.resetEval) showAnalysis(null);
      render();
      return maybeEngineMove();
    }, function (err) {
      if (gen !== state.gen) return;
      showMessage(err.message);
    }).then(function () {
      setBusy(-1);
      render();
    });
  }

  function newGame() {
    state.flipped = engineSide() === "white";
    var fenParam = new URLSearchParams(location.search).get("fen");
    // a new game restarts from the page's initial position (start position or ?fen=)
    return loadGame(state.initialFen || fenParam || null, [], { resetEval: true });
  }

  function undo() {
    var p = state.position;
    if (!p || !state.moves.length) return;
    var moves = state.moves.slice(0, -1);
    var es = engineSide();
    if (es !== "none") {
      var startSide = yariFenInfo(p.start_fen).side;
      var sideAt = function (k) { return (k % 2 === 0) ? startSide : (startSide === "white" ? "black" : "white"); };
      while (moves.length > 0 && sideAt(moves.length) === es) moves.pop();
    }
    loadGame(state.startFen, moves, {});
  }

  function copyText(text, what) {
    var ta = $("export");
    ta.value = text;
    function fallback() {
      ta.focus();
      ta.select();
      var ok = false;
      try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
      showNotice(ok ? what + " copied" : what + " is in the box below (select and copy)");
    }
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(function () {
        showNotice(what + " copied to clipboard");
      }, fallback);
    } else {
      fallback();
    }
  }

  function copyPgn() {
    var es = engineSide();
    var white = es === "white" ? "yari" : (es === "black" ? "You" : "White");
    var black = es === "black" ? "yari" : (es === "white" ? "You" : "Black");
    setBusy(+1);
    yariApi("POST", "/api/pgn", { fen: state.startFen, moves: state.moves.slice(), white: white, black: black })
      .then(function (r) { showMessage(""); copyText(r.pgn, "PGN"); }, function (err) { showMessage(err.message); })
      .then(function () { setBusy(-1); });
  }

  function buildLegend() {
    var rows = ["K", "R", "+R", "B", "+B", "N", "+N", "P", "+P"].map(function (role) {
      var info = YARI_PIECES[role];
      return "<tr><td class=\"sym\">" + yariPieceSVG(role, 36) + "</td><td class=\"fen\">" + role + "</td><td>" +
        info.name + "</td><td class=\"mv\">" + info.moves + "</td></tr>";
    });
    document.querySelector("#legend tbody").innerHTML = rows.join("");
  }

  // ------------------------------------------------------------ wiring
  $("promote-yes").addEventListener("click", function () { resolvePromotion(true); });
  $("promote-no").addEventListener("click", function () { resolvePromotion(false); });
  $("new-game").addEventListener("click", newGame);
  $("undo").addEventListener("click", undo);
  $("flip").addEventListener("click", function () { state.flipped = !state.flipped; render(); });
  $("analyse").addEventListener("click", function () { if (!state.thinking) think(false); });
  $("copy-fen").addEventListener("click", function () { if (state.position) copyText(state.position.fen, "FEN"); });
  $("copy-pgn").addEventListener("click", copyPgn);
  $("fen-load").addEventListener("click", function () {
    var fen = $("fen-input").value.trim();
    if (!fen) { showMessage("enter a FEN first"); return; }
    loadGame(fen, [], { resetEval: true });
  });
  $("fen-input").addEventListener("keydown", function (ev) { if (ev.key === "Enter") $("fen-load").click(); });
  $("engine-side").addEventListener("change", function () {
    if (state.thinking) cancelThinking();
    state.selected = null;
    state.flipped = engineSide() === "white";
    render();
    if (isEngineTurn() && !state.thinking) {
      setBusy(+1);
      maybeEngineMove().then(function () { setBusy(-1); render(); });
    }
  });
  // after a failed engine search, changing the model retries the engine move
  $("model").addEventListener("change", function () {
    if (isEngineTurn() && !state.busy) {
      setBusy(+1);
      maybeEngineMove().then(function () { setBusy(-1); render(); });
    }
  });
  $("strength-kind").addEventListener("change", function () {
    var kind = $("strength-kind").value, inp = $("strength");
    var v = parseInt(inp.value, 10);
    if (kind === "movetime" && (v === 200 || !(v > 0))) inp.value = 1000;
    if (kind === "nodes" && (v === 1000 || !(v > 0))) inp.value = 200;
  });
  document.addEventListener("keydown", function (ev) {
    if (ev.key === "Escape") {
      if (!$("promotion").hidden) { state.pendingPromotion = null; $("promotion").hidden = true; }
      if (state.selected) { state.selected = null; render(); }
    }
  });
  enableHandDrag($("hand-white"), svg);
  enableHandDrag($("hand-black"), svg);

  window.yariPlayMove = function (mv) { return playMove(String(mv)); };
  window.yariState = function () {
    return { fen: state.position ? state.position.fen : null, moves: state.moves.slice(), position: state.position };
  };

  // ------------------------------------------------------------ start
  function start() {
    buildLegend();
    var q = new URLSearchParams(location.search);
    setBusy(+1);
    yariApi("GET", "/api/info").then(function (info) {
      state.info = info;
      var sel = $("model");
      var models = info.models && info.models.length ? info.models : ["default"];
      var want = q.get("model");
      if (want && models.indexOf(want) < 0) models = models.concat([want]);
      sel.innerHTML = models.map(function (m) {
        return '<option value="' + m.replace(/"/g, "&quot;") + '">' + m.replace(/</g, "&lt;") + "</option>";
      }).join("");
      if (want) sel.value = want;
      else if (models.indexOf("default") >= 0) sel.value = "default";
      if (info.max_threads) $("threads").max = info.max_threads;
      if (info.run_dir) { $("run-link").hidden = false; }
      $("model-path").textContent = info.model ? "model: " + info.model : "";
    }, function (err) {
      showMessage("could not load /api/info: " + err.message);
    }).then(function () {
      var fen = q.get("fen");
      state.flipped = engineSide() === "white";
      return positionRequest(fen || null, []).then(function (pos) {
        state.initialFen = fen || null;
        setPosition(pos);
        if (fen) $("fen-input").value = fen;
      }, function (err) {
        showMessage(err.message);
        if (!fen) return null;
        return positionRequest(null, []).then(setPosition, function (e2) { showMessage(e2.message); });
      });
    }).then(function () {
      render();
      return maybeEngineMove();
    }).then(function () {
      setBusy(-1);
      render();
    });
  }
  render();
  start();
})();

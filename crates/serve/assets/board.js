// yari-zero board renderer (shared by the play page and the game viewer).
// Plain browser JS, no dependencies. Exposes globals:
//   renderBoard(svg, position, opts)
//   renderHand(container, color, hand, opts)
//   enableHandDrag(container, svg)
//   yariPieceSVG(piece, size) -> SVG markup string (legend, hands, promotion dialog)
//   yariApi(method, url, body) -> Promise<json>, rejects with Error(message)
//   yariParseMove(m), yariFenInfo(fen), YARI_PIECES
(function () {
  "use strict";

  var FILES = "abcdefg";
  var NFILES = 7, NRANKS = 9;
  var S = 60;                 // cell size in SVG units
  var ML = 22, MT = 6, MR = 6, MB = 22; // margins for coordinates
  var W = ML + NFILES * S + MR, H = MT + NRANKS * S + MB;
  var NS = "http://www.w3.org/2000/svg";

  var PIECES = {
    "K":  { kanjiW: "王", kanjiB: "玉", name: "General", moves: "One step in any direction." },
    "R":  { kanji: "飛", name: "Forward Rook", moves: "Slides forward, left or right (never back)." },
    "+R": { kanji: "龍", name: "Rook", moves: "Slides any distance orthogonally." },
    "B":  { kanji: "角", name: "Yari Bishop", moves: "Slides straight forward, or one step diagonally forward." },
    "+B": { kanji: "金", mark: "b", name: "Gold (from Yari Bishop)", moves: "One step forward, diagonally forward, sideways or back; or slides straight back." },
    "N":  { kanji: "桂", name: "Yari Knight", moves: "Slides straight forward, or leaps like a shogi knight (two forward, one sideways)." },
    "+N": { kanji: "金", mark: "n", name: "Gold (from Yari Knight)", moves: "One step forward, diagonally forward, sideways or back; or slides straight back." },
    "P":  { kanji: "歩", name: "Pawn", moves: "One step forward." },
    "+P": { kanji: "銀", name: "Silver", moves: "One step forward or diagonally forward; or slides straight back." }
  };

  // ---- CJK font detection: without a CJK font the kanji would be tofu boxes,
  // so the Latin letter becomes the main symbol (html.no-cjk).
  function detectCJK() {
    try {
      var c = document.createElement("canvas");
      c.width = 40; c.height = 40;
      var ctx = c.getContext("2d");
      if (!ctx) return true;
      function img(ch) {
        ctx.clearRect(0, 0, 40, 40);
        ctx.font = "32px sans-serif";
        ctx.textBaseline = "top";
        ctx.fillStyle = "#000";
        ctx.fillText(ch, 2, 2);
        var d = ctx.getImageData(0, 0, 40, 40).data, s = "";
        var sum = 0;
        for (var i = 3; i < d.length; i += 4) { sum += d[i]; if (i % 64 === 3) s += d[i].toString(36); }
        return { s: s, sum: sum };
      }
      var missing = img("\uFFFF");
      var missing2 = img("\u0378");
      var kanji = ["飛", "金", "歩"];
      var ok = 0;
      for (var k = 0; k < kanji.length; k++) {
        var a = img(kanji[k]);
        if (a.sum > 0 && a.s !== missing.s && a.s !== missing2.s) ok++;
      }
      // all three distinct from the "missing glyph" rendering and from each other
      var a0 = img(kanji[0]).s, a1 = img(kanji[1]).s;
      return ok === kanji.length && a0 !== a1;
    } catch (e) {
      return true;
    }
  }
  var HAS_CJK = detectCJK();
  if (!HAS_CJK) document.documentElement.classList.add("no-cjk");

  function esc(s) {
    return String(s).replace(/[&<>"']/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c];
    });
  }

  // piece: FEN text, e.g. "P", "+n", "k". Returns inner SVG markup of a tile
  // drawn in a box 0..S x 0..S (caller positions it).
  // down: draw the tile pointing down (Black's pieces when White is at the bottom).
  function pieceInner(piece, flipped) {
    var promoted = piece.charAt(0) === "+";
    var letter = piece.charAt(promoted ? 1 : 0);
    var black = letter === letter.toLowerCase();
    var down = black !== !!flipped;
    var role = (promoted ? "+" : "") + letter.toUpperCase();
    var info = PIECES[role] || { kanji: "?", name: role };
    var kanji = role === "K" ? (black ? info.kanjiB : info.kanjiW) : info.kanji;
    var cls = "tile" + (black ? " black" : " white") + (promoted ? " promoted" : "");
    var poly = "30,5 48,12 54,55 6,55 12,12";
    var out = '<g class="' + cls + '">';
    out += '<g' + (down ? ' transform="rotate(180 30 30)"' : "") + '>';
    out += '<polygon class="tile-shadow" points="' + poly + '" transform="translate(1.5 2)"/>';
    out += '<polygon class="tile-face" points="' + poly + '"/>';
    out += '<text class="kanji" x="30" y="33" text-anchor="middle" dominant-baseline="central">' + kanji + "</text>";
    out += "</g>";
    // Latin letters stay upright for both sides (readability).
    var small = role;
    var sy = down ? 16 : 50;
    out += '<text class="latin-small" x="50" y="' + sy + '" text-anchor="end" dominant-baseline="central">' + esc(small) + "</text>";
    var bigY = down ? 27 : 35;
    out += '<text class="latin-big' + (promoted ? " two" : "") + '" x="30" y="' + bigY + '" text-anchor="middle" dominant-baseline="central">' + esc(role) + "</text>";
    if (info.mark) {
      out += '<text class="origin-mark" x="' + 14 + '" y="' + (down ? 16 : 50) + '" text-anchor="middle" dominant-baseline="central">' + info.mark + "</text>";
    }
    out += "</g>";
    return out;
  }

  function pieceSVG(piece, size, flipped) {
    size = size || 40;
    return '<svg class="piece-icon" viewBox="0 0 60 60" width="' + size + '" height="' + size + '" aria-label="' + esc(piece) + '">' + pieceInner(piece, flipped) + "</svg>";
  }

  function sqXY(square, flipped) {
    var f = FILES.indexOf(square.charAt(0));
    var r = parseInt(square.slice(1), 10);
    var col = f, row = NRANKS - r;
    if (flipped) { col = NFILES - 1 - col; row = NRANKS - 1 - row; }
    return { x: ML + col * S, y: MT + row * S };
  }

  function parseMove(m) {
    if (!m || m.length < 4) return null;
    if (m.charAt(1) === "@") return { drop: m.charAt(0).toUpperCase(), to: m.slice(2, 4), promo: false };
    return { from: m.slice(0, 2), to: m.slice(2, 4), promo: m.charAt(4) === "+" };
  }

  function fenInfo(fen) {
    var parts = String(fen || "").trim().split(/\s+/);
    var side = parts[1] === "b" ? "black" : "white";
    var full = parseInt(parts[5], 10);
    if (!(full >= 1)) full = 1;
    return { side: side, fullmove: full };
  }

  function el(name, attrs) {
    var e = document.createElementNS(NS, name);
    if (attrs) for (var k in attrs) e.setAttribute(k, attrs[k]);
    return e;
  }

  // ---------------------------------------------------------------- board
  // The board DOM is built once per <svg> and then updated in place, so that
  // element references (e.g. held by a WebDriver test) stay valid across moves.
  function skeleton(svg) {
    if (svg._yariSkel && svg._yariSkel.root.parentNode === svg) return svg._yariSkel;
    svg.setAttribute("viewBox", "0 0 " + W + " " + H);
    svg.classList.add("yari-board");
    var html = '<g class="board-root">';
    html += '<rect class="board-bg" x="0" y="0" width="' + W + '" height="' + H + '" rx="6"/>';
    html += '<rect class="board-field" x="' + ML + '" y="' + MT + '" width="' + NFILES * S + '" height="' + NRANKS * S + '"/>';
    html += '<g class="squares">';
    for (var rank = NRANKS; rank >= 1; rank--) {
      for (var f = 0; f < NFILES; f++) {
        var sq = FILES.charAt(f) + rank;
        html += '<g class="sq" data-square="' + sq + '">' +
          '<rect class="cell" x="0" y="0" width="' + S + '" height="' + S + '"/>' +
          '<circle class="dot" cx="30" cy="30" r="8"/>' +
          '<path class="corners" d="M0 0h14L0 14zM60 0v14L46 0zM0 60v-14L14 60zM60 60h-14L60 46z"/></g>';
      }
    }
    html += "</g>";
    var g = '<g class="grid">';
    for (var i = 0; i <= NFILES; i++) g += '<line x1="' + (ML + i * S) + '" y1="' + MT + '" x2="' + (ML + i * S) + '" y2="' + (MT + NRANKS * S) + '"/>';
    for (var j = 0; j <= NRANKS; j++) g += '<line x1="' + ML + '" y1="' + (MT + j * S) + '" x2="' + (ML + NFILES * S) + '" y2="' + (MT + j * S) + '"/>';
    [3, 6].forEach(function (r) { g += '<line class="zone-line" x1="' + ML + '" y1="' + (MT + r * S) + '" x2="' + (ML + NFILES * S) + '" y2="' + (MT + r * S) + '"/>'; });
    html += g + "</g>";
    html += '<g class="coords"></g><g class="arrows"></g></g>';
    svg.innerHTML = html;
    var root = svg.querySelector(".board-root");
    var squares = {};
    Array.prototype.forEach.call(svg.querySelectorAll(".sq"), function (e) { squares[e.getAttribute("data-square")] = e; });
    svg._yariSkel = { root: root, squares: squares, coords: svg.querySelector(".coords"), arrows: svg.querySelector(".arrows"), coordsFlipped: null };
    return svg._yariSkel;
  }

  function renderBoard(svg, position, opts) {
    opts = opts || {};
    var flipped = !!opts.flipped;
    var sk = skeleton(svg);
    var targets = {};
    (opts.targets || []).forEach(function (t) { targets[t] = true; });
    var last = parseMove(opts.lastMove);
    var board = (position && position.board) || [];
    for (var row = 0; row < NRANKS; row++) {
      for (var f = 0; f < NFILES; f++) {
        var rank = NRANKS - row;
        var sq = FILES.charAt(f) + rank;
        var node = sk.squares[sq];
        var p = sqXY(sq, flipped);
        var piece = (board[row] && board[row][f]) || "";
        var cls = "sq";
        if (rank >= 7 || rank <= 3) cls += " zone";
        if (last && (last.to === sq || last.from === sq)) cls += " last";
        if (opts.selected === sq) cls += " selected";
        if (targets[sq]) cls += " target";
        if (opts.check === sq) cls += " check";
        if (piece) cls += " occupied";
        if (node.getAttribute("class") !== cls) node.setAttribute("class", cls);
        var tr = "translate(" + p.x + " " + p.y + ")";
        if (node.getAttribute("transform") !== tr) node.setAttribute("transform", tr);
        var pe = node.querySelector(".piece");
        var key = piece + "|" + flipped;
        if (pe && (!piece || pe._yariKey !== key)) { node.removeChild(pe); pe = null; }
        if (piece && !pe) {
          pe = el("g", { "class": "piece", "data-square": sq, "data-piece": piece });
          pe.innerHTML = pieceInner(piece, flipped);
          pe._yariKey = key;
          node.appendChild(pe);
        } else if (pe) {
          pe.classList.remove("dragging-src");
        }
      }
    }
    if (sk.coordsFlipped !== flipped) {
      sk.coordsFlipped = flipped;
      var c = "";
      for (var ff = 0; ff < NFILES; ff++) {
        var col = flipped ? NFILES - 1 - ff : ff;
        c += '<text x="' + (ML + col * S + S / 2) + '" y="' + (MT + NRANKS * S + 15) + '" text-anchor="middle">' + FILES.charAt(ff) + "</text>";
      }
      for (var rr = 1; rr <= NRANKS; rr++) {
        var rw = flipped ? rr - 1 : NRANKS - rr;
        c += '<text x="' + (ML / 2) + '" y="' + (MT + rw * S + S / 2) + '" text-anchor="middle" dominant-baseline="central">' + rr + "</text>";
      }
      sk.coords.innerHTML = c;
    }
    var html = "";
    (opts.arrows || []).forEach(function (a) {
      var mv = parseMove(a.move);
      if (!mv) return;
      if (!mv.from) {
        var q = sqXY(mv.to, flipped);
        html += '<circle class="arrow-drop" cx="' + (q.x + S / 2) + '" cy="' + (q.y + S / 2) + '" r="24" style="opacity:' + (a.opacity || 0.8) + '"/>';
        return;
      }
      var p1 = sqXY(mv.from, flipped), p2 = sqXY(mv.to, flipped);
      var x1 = p1.x + S / 2, y1 = p1.y + S / 2, x2 = p2.x + S / 2, y2 = p2.y + S / 2;
      var dx = x2 - x1, dy = y2 - y1, len = Math.sqrt(dx * dx + dy * dy) || 1;
      var ux = dx / len, uy = dy / len;
      var w = a.width || 7, hl = 16, hw = 13;
      var bx = x2 - ux * hl, by = y2 - uy * hl;
      var nx = -uy, ny = ux;
      var pts = [
        [x1 + nx * w / 2, y1 + ny * w / 2], [bx + nx * w / 2, by + ny * w / 2], [bx + nx * hw, by + ny * hw],
        [x2, y2], [bx - nx * hw, by - ny * hw], [bx - nx * w / 2, by - ny * w / 2], [x1 - nx * w / 2, y1 - ny * w / 2]
      ].map(function (pt) { return pt[0].toFixed(1) + "," + pt[1].toFixed(1); }).join(" ");
      html += '<polygon class="arrow' + (a.cls ? " " + a.cls : "") + '" points="' + pts + '" style="opacity:' + (a.opacity || 0.8) + '"/>';
    });
    if (sk.arrows._html !== html) { sk.arrows.innerHTML = html; sk.arrows._html = html; }
    if (position && position.fen != null) svg.setAttribute("data-fen", position.fen);
    svg._yari = { opts: opts, position: position, flipped: flipped };
    bindBoard(svg);
  }

  function squareFromPoint(svg, clientX, clientY) {
    var r = svg.getBoundingClientRect();
    if (!r.width || !r.height) return null;
    var x = (clientX - r.left) * W / r.width, y = (clientY - r.top) * H / r.height;
    var col = Math.floor((x - ML) / S), row = Math.floor((y - MT) / S);
    if (col < 0 || col >= NFILES || row < 0 || row >= NRANKS) return null;
    var flipped = svg._yari && svg._yari.flipped;
    if (flipped) { col = NFILES - 1 - col; row = NRANKS - 1 - row; }
    return FILES.charAt(col) + (NRANKS - row);
  }

  function clientToSvg(svg, clientX, clientY) {
    var r = svg.getBoundingClientRect();
    return { x: (clientX - r.left) * W / r.width, y: (clientY - r.top) * H / r.height };
  }

  function bindBoard(svg) {
    if (svg._yariBound) return;
    svg._yariBound = true;
    var drag = null;
    var suppressClick = false;

    svg.addEventListener("click", function (ev) {
      if (suppressClick) { suppressClick = false; return; }
      var st = svg._yari;
      if (!st || !st.opts.onSquare) return;
      var t = ev.target.closest ? ev.target.closest("[data-square]") : null;
      var sq = t ? t.getAttribute("data-square") : squareFromPoint(svg, ev.clientX, ev.clientY);
      if (sq) st.opts.onSquare(sq);
    });

    svg.addEventListener("pointerdown", function (ev) {
      var st = svg._yari;
      if (!st || !st.opts.onSquare || ev.button !== 0) return;
      var pc = ev.target.closest ? ev.target.closest(".piece") : null;
      if (!pc) return;
      drag = { from: pc.getAttribute("data-square"), piece: pc.getAttribute("data-piece"), x: ev.clientX, y: ev.clientY, id: ev.pointerId, active: false, ghost: null };
    });

    svg.addEventListener("pointermove", function (ev) {
      if (!drag || ev.pointerId !== drag.id) return;
      var st = svg._yari;
      if (!drag.active) {
        var d = Math.abs(ev.clientX - drag.x) + Math.abs(ev.clientY - drag.y);
        if (d < 8) return;
        // start dragging: select the piece (page re-renders with its targets)
        if (st.opts.selected !== drag.from) st.opts.onSquare(drag.from);
        st = svg._yari;
        if (st.opts.selected !== drag.from) { drag = null; return; }
        drag.active = true;
        try { svg.setPointerCapture(ev.pointerId); } catch (e) { /* ignore */ }
        startGhost(svg, drag);
      }
      moveGhost(svg, drag, ev.clientX, ev.clientY);
      ev.preventDefault();
    });

    function finish(ev, cancelled) {
      if (!drag || ev.pointerId !== drag.id) return;
      var d = drag;
      drag = null;
      if (!d.active) return;
      if (d.ghost && d.ghost.parentNode) d.ghost.parentNode.removeChild(d.ghost);
      Array.prototype.forEach.call(svg.querySelectorAll(".dragging-src"), function (e) { e.classList.remove("dragging-src"); });
      suppressClick = true;
      setTimeout(function () { suppressClick = false; }, 50);
      var st = svg._yari;
      var to = cancelled ? null : squareFromPoint(svg, ev.clientX, ev.clientY);
      if (to && to !== d.from) st.opts.onSquare(to);
      else rerender(svg);
    }
    svg.addEventListener("pointerup", function (ev) { finish(ev, false); });
    svg.addEventListener("pointercancel", function (ev) { finish(ev, true); });
  }

  function rerender(svg) {
    var st = svg._yari;
    if (st) renderBoard(svg, st.position, st.opts);
  }

  function startGhost(svg, d) {
    var src = svg.querySelector('.piece[data-square="' + d.from + '"]');
    if (src) src.classList.add("dragging-src");
    var g = el("g", { "class": "ghost" });
    g.innerHTML = pieceInner(d.piece, svg._yari && svg._yari.flipped);
    svg.appendChild(g);
    d.ghost = g;
  }

  function moveGhost(svg, d, cx, cy) {
    if (!d.ghost) return;
    var p = clientToSvg(svg, cx, cy);
    d.ghost.setAttribute("transform", "translate(" + (p.x - S / 2) + " " + (p.y - S / 2) + ") scale(1.08)");
  }

  // ---------------------------------------------------------------- hands
  // hand: {"R":0,"B":1,"N":0,"P":2}; opts: {active (bool: side to move, clickable), selected ("P@"), showZero}
  function renderHand(container, color, hand, opts) {
    opts = opts || {};
    hand = hand || {};
    var html = "";
    ["R", "B", "N", "P"].forEach(function (role) {
      var n = hand[role] || 0;
      if (!n && opts.showZero === false) return;
      var piece = color === "white" ? role : role.toLowerCase();
      var cls = "hand-piece" + (n ? "" : " empty") + (opts.active && n ? " active" : "") +
        (opts.selected === role + "@" && opts.active ? " selected" : "");
      html += '<button type="button" class="' + cls + '" data-color="' + color + '" data-role="' + role + '"' +
        (n ? "" : " disabled") + ' title="' + esc(PIECES[role].name) + " in hand: " + n + '">' +
        pieceSVG(piece, 38, opts.flipped) + '<span class="count">' + n + "</span></button>";
    });
    container.innerHTML = html;
    container._yari = { color: color, opts: opts };
    if (!container._yariBound) {
      container._yariBound = true;
      container.addEventListener("click", function (ev) {
        if (container._suppressClick) { container._suppressClick = false; return; }
        var b = ev.target.closest ? ev.target.closest(".hand-piece") : null;
        var st = container._yari;
        if (!b || !st || !st.opts.onHand) return;
        st.opts.onHand(b.getAttribute("data-color"), b.getAttribute("data-role"));
      });
    }
  }

  // Drag a piece from a hand container onto the board svg.
  function enableHandDrag(container, svg) {
    if (container._yariDrag) return;
    container._yariDrag = true;
    var d = null;
    container.addEventListener("pointerdown", function (ev) {
      var b = ev.target.closest ? ev.target.closest(".hand-piece") : null;
      if (!b || b.disabled || ev.button !== 0) return;
      d = { color: b.getAttribute("data-color"), role: b.getAttribute("data-role"), x: ev.clientX, y: ev.clientY, id: ev.pointerId, active: false, ghost: null, btn: b };
    });
    document.addEventListener("pointermove", function (ev) {
      if (!d || ev.pointerId !== d.id) return;
      if (!d.active) {
        if (Math.abs(ev.clientX - d.x) + Math.abs(ev.clientY - d.y) < 8) return;
        var st = container._yari;
        if (!st || !st.opts.onHand) { d = null; return; }
        var key = d.role + "@";
        var bst = svg._yari;
        if (!(bst && bst.opts.selected === key)) st.opts.onHand(d.color, d.role);
        bst = svg._yari;
        if (!(bst && bst.opts.selected === key)) { d = null; return; }
        d.active = true;
        var gh = document.createElement("div");
        gh.className = "hand-ghost";
        var r = svg.getBoundingClientRect();
        var size = Math.round(S * r.width / W);
        gh.style.width = gh.style.height = size + "px";
        gh.innerHTML = pieceSVG(d.color === "white" ? d.role : d.role.toLowerCase(), size, svg._yari && svg._yari.flipped);
        document.body.appendChild(gh);
        d.ghost = gh; d.size = size;
      }
      d.ghost.style.left = (ev.clientX - d.size / 2) + "px";
      d.ghost.style.top = (ev.clientY - d.size / 2) + "px";
      ev.preventDefault();
    });
    function end(ev, cancelled) {
      if (!d || ev.pointerId !== d.id) return;
      var dd = d; d = null;
      if (!dd.active) return;
      if (dd.ghost && dd.ghost.parentNode) dd.ghost.parentNode.removeChild(dd.ghost);
      container._suppressClick = true;
      setTimeout(function () { container._suppressClick = false; }, 50);
      var sq = cancelled ? null : squareFromPoint(svg, ev.clientX, ev.clientY);
      var st = svg._yari;
      if (sq && st && st.opts.onSquare) st.opts.onSquare(sq);
    }
    document.addEventListener("pointerup", function (ev) { end(ev, false); });
    document.addEventListener("pointercancel", function (ev) { end(ev, true); });
  }

  // ---------------------------------------------------------------- API helper
  function api(method, url, body) {
    var init = { method: method, headers: {} };
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    if (arguments.length > 3 && arguments[3]) init.signal = arguments[3];
    return fetch(url, init).then(function (res) {
      return res.text().then(function (text) {
        var data = null;
        try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
        if (!res.ok) {
          var msg = (data && data.error) ? data.error : ("HTTP " + res.status + (text && !data ? ": " + text.slice(0, 200) : ""));
          var err = new Error(msg);
          err.status = res.status;
          throw err;
        }
        if (data === null) throw new Error("invalid JSON from " + url);
        return data;
      });
    });
  }

  window.renderBoard = renderBoard;
  window.renderHand = renderHand;
  window.enableHandDrag = enableHandDrag;
  window.yariPieceSVG = pieceSVG;
  window.yariApi = api;
  window.yariParseMove = parseMove;
  window.yariFenInfo = fenInfo;
  window.yariHasCJK = HAS_CJK;
  window.YARI_PIECES = PIECES;
})();

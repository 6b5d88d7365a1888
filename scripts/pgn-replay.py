#!/usr/bin/env python3
"""Replays every game of PGN files in pyffish (Fairy-Stockfish's rules, variant yarishogi) and
checks that each move is legal and that the PGN's result is the one the rules give.

A game the rules ended (no legal move: mate or stalemate; threefold repetition; perpetual check)
must carry that result. A game the rules did not end must say why (Termination: resignation,
forfeit or ply-cap adjudication) or be unfinished (`*`).

Usage: pgn-replay.py FILE.pgn [...]. Prints one summary line; exits 1 on any disagreement.
"""
import re
import sys

import pyffish as sf

VARIANT = "yarishogi"
TAG = re.compile(r'^\[(\w+) "((?:[^"\\]|\\.)*)"\]$')
ADJUDICATED = {"resignation", "forfeit", "adjudication: ply cap"}


def games(text):
    """Yields (tags, moves) for each game of a PGN text."""
    tags, movetext = {}, []
    for line in text.splitlines() + [""]:
        line = line.strip()
        match = TAG.match(line)
        if match:
            if movetext:
                yield tags, movetext
                tags, movetext = {}, []
            tags[match.group(1)] = match.group(2).replace('\\"', '"').replace("\\\\", "\\")
        elif line:
            movetext.extend(line.split())
        elif movetext:
            yield tags, movetext
            tags, movetext = {}, []


def rules_result(fen, moves):
    """The result the rules give after `moves`, with its reason, or (None, None)."""
    side = sf.get_fen(VARIANT, fen, moves).split()[1]
    def for_mover(value):
        if value == 0:
            return "1/2-1/2"
        mover_wins = value > 0
        return "1-0" if (side == "w") == mover_wins else "0-1"
    if not sf.legal_moves(VARIANT, fen, moves):
        return for_mover(sf.game_result(VARIANT, fen, moves)), "no legal move"
    end, value = sf.is_immediate_game_end(VARIANT, fen, moves)
    if end:
        return for_mover(value), "immediate end"
    end, value = sf.is_optional_game_end(VARIANT, fen, moves)
    if end:
        return for_mover(value), "repetition"
    return None, None


def check(tags, tokens):
    """An error message, or None when the game replays with its result."""
    if tags.get("Variant", "").lower() != VARIANT:
        return f"Variant is {tags.get('Variant')!r}"
    fen = tags.get("FEN", sf.start_fen(VARIANT))
    result = tokens[-1]
    if result not in ("1-0", "0-1", "1/2-1/2", "*"):
        return f"movetext does not end with a result: {result!r}"
    if tags.get("Result") != result:
        return f"Result tag {tags.get('Result')!r} but movetext ends {result!r}"
    moves = [t for t in tokens[:-1] if not re.match(r"^\d+\.(\.\.)?$", t)]
    if "PlyCount" in tags and int(tags["PlyCount"]) != len(moves):
        return f"PlyCount {tags['PlyCount']} but {len(moves)} moves"
    for i, move in enumerate(moves):
        if rules_result(fen, moves[:i])[0] is not None:
            return f"move {i + 1} ({move}) after the game ended"
        if move not in sf.legal_moves(VARIANT, fen, moves[:i]):
            return f"move {i + 1} ({move}) is illegal in {sf.get_fen(VARIANT, fen, moves[:i])}"
    expected, why = rules_result(fen, moves)
    termination = tags.get("Termination", "")
    if expected is not None:
        if result != expected:
            return f"ends by the rules ({why}) as {expected}, PGN says {result}"
        return None
    if result != "*" and termination not in ADJUDICATED:
        return f"result {result} but the rules did not end the game (Termination {termination!r})"
    return None


def main():
    total, by_rules, failures = 0, 0, []
    for path in sys.argv[1:]:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for tags, tokens in games(text):
            total += 1
            error = check(tags, tokens)
            if error:
                failures.append(f"{path}: game {tags.get('Round', total)}: {error}")
            elif tags.get("Termination", "") not in ADJUDICATED and tokens[-1] != "*":
                by_rules += 1
    if failures or total == 0:
        print(f"FAIL: {len(failures)} of {total} games disagree with pyffish")
        print("\n".join(failures[:20]))
        return 1
    print(f"ok: {total} games replay legally in pyffish {'.'.join(map(str, sf.version()))}, "
          f"{by_rules} ended by the rules with the same result, {total - by_rules} adjudicated or unfinished")
    return 0


if __name__ == "__main__":
    sys.exit(main())

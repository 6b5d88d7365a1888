#!/usr/bin/env python3
"""The pages of `yari serve` in a real headless Chromium (Debian's chromium and chromedriver,
driven through WebDriver by Selenium).

Play page: a legal move by clicking, the engine's reply on the board, an illegal move refused
with the board unchanged, a promotion choice, a drop from hand in a set-up position, a mate in
one played to the end with its result. Run page: a smoke run in progress, whose generation count
must advance on the page. Game viewer: a game of that run replayed move by move. A screenshot of
each page goes to --shots (the README's docs/img/).

Usage: browser-test.py --yari BIN --model FILE --config SMOKE.toml --shots DIR
Prints one line per check; exits non-zero at the first failure.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

WAIT = 120


def serve(yari, *args):
    """Starts `yari serve` on a free port; returns the process and the base URL."""
    proc = subprocess.Popen([yari, "serve", "--port", "0", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + WAIT
    while time.time() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        match = re.search(r"open (http://\S+/)", line)
        if match:
            return proc, match.group(1)
    proc.kill()
    sys.exit(f"yari serve did not print its address (exit {proc.poll()})")


def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1280,900"):
        options.add_argument(arg)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


def check(condition, message):
    if not condition:
        raise AssertionError(message)
    print(f"ok: {message}")


class Page:
    def __init__(self, driver):
        self.d = driver

    def el(self, css):
        return self.d.find_element(By.CSS_SELECTOR, css)

    def els(self, css):
        return self.d.find_elements(By.CSS_SELECTOR, css)

    def wait(self, predicate, what, timeout=WAIT):
        try:
            return WebDriverWait(self.d, timeout, poll_frequency=0.2).until(lambda d: predicate())
        except Exception as e:
            shot = os.path.join(tempfile.gettempdir(), "yari-browser-failure.png")
            self.d.save_screenshot(shot)
            raise AssertionError(f"timed out waiting for {what} (screenshot {shot})") from e

    def fen(self):
        return self.el("#board").get_attribute("data-fen")

    def idle(self):
        return self.el("body").get_attribute("data-busy") == "false"

    def click_square(self, square):
        self.el(f'#board .sq[data-square="{square}"]').click()

    def piece(self, square):
        found = self.els(f'#board .piece[data-square="{square}"]')
        return found[0].get_attribute("data-piece") if found else None

    def set_value(self, css, value):
        field = self.el(css)
        field.clear()
        field.send_keys(str(value))

    def load_fen(self, fen):
        self.set_value("#fen-input", fen)
        self.el("#fen-load").click()
        self.wait(lambda: self.fen() == fen and self.idle(), f"the board to show {fen}")


def play_page(page, base, shots):
    d = page.d
    d.get(base)
    page.wait(lambda: page.els('#board .sq[data-square="d3"]') and page.fen(), "the board")
    start = page.fen()
    check(start.startswith("rnnkbbr/7/ppppppp/"), f"the play page shows the start position ({start})")
    Select(page.el("#engine-side")).select_by_value("black")
    Select(page.el("#strength-kind")).select_by_value("nodes")
    page.set_value("#strength", 64)
    page.click_square("d3")
    page.wait(lambda: page.els("#board .target"), "legal targets to be highlighted")
    page.click_square("d4")
    page.wait(lambda: len(page.els("#movelist li")) >= 2 and page.idle(), "the engine's reply")
    after = page.fen()
    check(page.piece("d4") == "P" and " w " in after,
          f"a move by clicking (d3d4), and the engine replied on the board ({after})")
    moves = d.execute_script("return window.yariState().moves")
    check(len(moves) == 2 and moves[0] == "d3d4", f"the move list is {moves}")
    d.save_screenshot(os.path.join(shots, "play.png"))

    page.click_square("d4")
    page.click_square("d6")
    time.sleep(0.5)
    check(page.fen() == after and page.piece("d4") == "P" and page.idle(),
          "clicking an illegal target (d4 to d6) plays nothing: the board is unchanged")
    # The same move forged past the page's own check: the server refuses it.
    d.execute_script('window.yariPlayMove("d4d6")')
    page.wait(lambda: page.el("#message").text.strip() and page.idle(), "the refusal message")
    check(page.fen() == after and page.piece("d4") == "P",
          f"an illegal move (d4d6) is refused: \"{page.el('#message').text.strip()}\", board unchanged")

    Select(page.el("#engine-side")).select_by_value("none")
    page.load_fen("3k3/7/7/3P3/7/7/7/7/3K3[] w - - 0 1")
    page.click_square("d6")
    page.click_square("d7")
    page.wait(lambda: page.el("#promotion").is_displayed(), "the promotion choice")
    page.el("#promote-yes").click()
    page.wait(lambda: page.piece("d7") == "+P", "the promoted pawn on d7")
    check(True, "a move with an optional promotion asks, and promotes when told to (d6d7+)")

    page.load_fen("3k3/7/7/7/7/7/7/7/3K3[P] w - - 0 1")
    page.el('.hand-piece[data-color="white"][data-role="P"]').click()
    page.wait(lambda: page.els("#board .target"), "the drop squares")
    page.click_square("c5")
    page.wait(lambda: page.piece("c5") == "P", "the dropped pawn on c5")
    check(" b " in page.fen(), f"a drop from hand (P@c5) in a set-up position ({page.fen()})")

    page.load_fen("3k3/2p4/7/7/7/7/5+n1/7/5NK[Rp] b - - 0 1")
    page.el('.hand-piece[data-color="black"][data-role="P"]').click()
    page.click_square("g2")
    page.wait(lambda: "checkmate" in page.el("#status").text.lower(), "the result")
    check(True, f"a mate in one played to the end: \"{page.el('#status').text.strip()}\"")
    d.save_screenshot(os.path.join(shots, "play-mate.png"))


def shown_generation(page):
    """The run page's generation number, 0 while it shows none (loading: a dash)."""
    text = page.el("#generation").text.strip()
    return int(text) if text.isdigit() else 0


def run_page(page, base, run_dir, shots):
    d = page.d
    d.get(base + "run")
    generation = lambda: shown_generation(page)
    page.wait(lambda: generation() > 0, "a generation number")
    first = generation()
    page.wait(lambda: generation() > first, f"generation {first} to advance")
    check(True, f"the run page follows a run in progress: generation {first} -> {generation()}")
    page.wait(lambda: page.els("#games a"), "the run's games")
    return first


def viewer(page, base, shots):
    d = page.d
    links = [a.get_attribute("href") for a in page.els("#games a")]
    selfplay = [l for l in links if "selfplay" in l]
    check(selfplay, f"the run page links its self-play games ({len(selfplay)} of {len(links)} links)")
    d.get(selfplay[-1])
    page.wait(lambda: len(page.els("#movelist li")) > 2 and page.fen(), "the game's moves")
    start = page.fen()
    for _ in range(3):
        page.el("#next").click()
    page.wait(lambda: page.fen() != start and page.el("#ply").text.startswith("3"), "ply 3")
    check(True, f"the viewer replays a game move by move ({page.el('#ply').text.strip()}, {page.fen()})")
    page.el("#last").click()
    plies = len(page.els("#movelist li"))
    page.wait(lambda: page.el("#ply").text.startswith(str(plies)), "the last ply")
    page.el("#first").click()
    page.wait(lambda: page.fen() == start, "the first position again")
    for ply in range(plies):
        page.wait(lambda: page.el("#ply").text.startswith(str(ply)), f"ply {ply}")
        # A position a few moves in makes the README's screenshot.
        if "%" in page.el("#policy").text and (ply >= 6 or ply == plies - 1):
            break
        page.el("#next").click()
    check("%" in page.el("#policy").text,
          f"the viewer shows the search's policy target at ply {ply} ({page.el('#value').text.strip()})")
    href = page.el("#download-pgn").get_attribute("href")
    check("/api/pgn?id=" in href, f"the viewer links its PGN ({href})")
    d.save_screenshot(os.path.join(shots, "game.png"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--yari", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--config", required=True, help="a run config; run with 12 generations")
    ap.add_argument("--shots", required=True)
    args = ap.parse_args()
    os.makedirs(args.shots, exist_ok=True)
    work = tempfile.mkdtemp(prefix="yari-browser-")
    run_dir = os.path.join(work, "run")
    with open(args.config, encoding="utf-8") as f:
        config = re.sub(r"(?m)^generations = \d+", "generations = 12", f.read())
    config_path = os.path.join(work, "run.toml")
    with open(config_path, "w", encoding="utf-8") as f:
        f.write(config)

    procs = []
    driver = None
    try:
        play_server, play_base = serve(args.yari, "--model", args.model)
        procs.append(play_server)
        driver = browser()
        page = Page(driver)
        play_page(page, play_base, args.shots)

        log = open(os.path.join(work, "run.log"), "w")
        run = subprocess.Popen([args.yari, "run", "--config", config_path, "--run-dir", run_dir],
                               stdout=log, stderr=subprocess.STDOUT)
        procs.append(run)
        deadline = time.time() + WAIT
        while not os.path.exists(os.path.join(run_dir, "state.json")):
            if time.time() > deadline or run.poll() is not None:
                sys.exit("the smoke run did not start")
            time.sleep(0.2)
        run_server, run_base = serve(args.yari, "--model", args.model, "--run-dir", run_dir)
        procs.append(run_server)
        run_page(page, run_base, run_dir, args.shots)
        run.wait(timeout=600)
        check(run.returncode == 0, "the run finished")
        driver.get(run_base + "run")
        page.wait(lambda: shown_generation(page) >= 12 and page.els("#rating-chart *"),
                  "the finished run's page")
        time.sleep(1)
        driver.save_screenshot(os.path.join(args.shots, "run.png"))
        viewer(page, run_base, args.shots)
        print(f"ok: screenshots in {args.shots}: play.png, play-mate.png, run.png, game.png")
    finally:
        if driver:
            driver.quit()
        for p in procs:
            if p.poll() is None:
                p.kill()
    return 0


if __name__ == "__main__":
    sys.exit(main())

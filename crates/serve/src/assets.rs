//! The pages and their scripts and styles, embedded in the binary: the server needs no file
//! beside it and no network.

use crate::api::Reply;

const PAGES: [(&str, &str); 3] = [
    ("play.html", include_str!("../assets/play.html")),
    ("run.html", include_str!("../assets/run.html")),
    ("game.html", include_str!("../assets/game.html")),
];

const ASSETS: [(&str, &str, &str); 5] = [
    (
        "style.css",
        "text/css; charset=utf-8",
        include_str!("../assets/style.css"),
    ),
    (
        "board.js",
        "text/javascript; charset=utf-8",
        include_str!("../assets/board.js"),
    ),
    (
        "play.js",
        "text/javascript; charset=utf-8",
        include_str!("../assets/play.js"),
    ),
    (
        "run.js",
        "text/javascript; charset=utf-8",
        include_str!("../assets/run.js"),
    ),
    (
        "game.js",
        "text/javascript; charset=utf-8",
        include_str!("../assets/game.js"),
    ),
];

/// One of the three pages.
pub fn page(name: &str) -> Reply {
    match PAGES.iter().find(|(n, _)| *n == name) {
        Some((_, html)) => Reply::new(200, "text/html; charset=utf-8", html.as_bytes().to_vec()),
        None => Reply::error(404, format!("no page {name}")),
    }
}

/// A script or style sheet, by its exact name (nothing else is served from `/assets/`).
pub fn asset(name: &str) -> Reply {
    match ASSETS.iter().find(|(n, _, _)| *n == name) {
        Some((_, content_type, text)) => Reply::new(200, content_type, text.as_bytes().to_vec()),
        None => Reply::error(404, format!("no asset {name:?}")),
    }
}

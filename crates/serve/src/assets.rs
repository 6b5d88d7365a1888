//! The pages and their scripts and styles, embedded in the binary: the server needs no file
//! beside it and no network. What to answer with them is the API's business.

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

/// One of the three pages' HTML.
pub fn page(name: &str) -> Option<&'static str> {
    PAGES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, html)| *html)
}

/// A script or style sheet by its exact name (nothing else is served from `/assets/`): its
/// content type and text.
pub fn asset(name: &str) -> Option<(&'static str, &'static str)> {
    ASSETS
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, content_type, text)| (*content_type, *text))
}

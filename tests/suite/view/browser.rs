//! Headless Debian `chromium` for the HTML view's test: the page's DOM after its script ran
//! (`--dump-dom`) and a screenshot. A missing browser is never a silent pass: with
//! `DMOVE_REQUIRE_PEER=1` (CI sets it and installs chromium) it fails; otherwise the skip is
//! recorded (`support::skip`) and nothing that needs the browser is checked.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// The browser binary, if installed.
pub fn chromium() -> Option<PathBuf> {
    let path = Path::new("/usr/bin/chromium");
    if path.exists() {
        return Some(path.to_path_buf());
    }
    crate::support::skip::skip(
        "the HTML view in a browser",
        "/usr/bin/chromium is not installed",
        "apt-get install chromium",
    );
    None
}

/// Runs chromium headless on `page` with `args` after the fixed flags (no network, no
/// first-run work, a fresh profile), killing it if it has not finished after two minutes (a
/// hung browser must fail the test, not stall the suite). Its output goes to files, so a large
/// DOM never blocks it on a full pipe.
pub fn run(browser: &Path, page: &Path, args: &[&str]) -> Output {
    let profile = tempfile::tempdir().expect("profile dir");
    let file = |name: &str| std::fs::File::create(profile.path().join(name)).expect("output file");
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(file("stdout"))
        .stderr(file("stderr"))
        .spawn()
        .expect("chromium starts");
    for _ in 0..1200 {
        if let Some(status) = child.try_wait().expect("wait") {
            let read = |name: &str| std::fs::read(profile.path().join(name)).expect("output");
            return Output {
                status,
                stdout: read("stdout"),
                stderr: read("stderr"),
            };
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    panic!(
        "chromium did not finish within two minutes on {}",
        page.display()
    );
}

/// The page's DOM after its script ran.
pub fn dom(browser: &Path, page: &Path) -> String {
    let out = run(browser, page, &["--dump-dom"]);
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 DOM")
}

/// What the page's script reported in `<body data-view-status=…>`: `ok: …`, `error: …`, or
/// `loading` when the script never finished.
pub fn status(dom: &str) -> String {
    let at = dom
        .find("data-view-status=\"")
        .expect("the body carries a status")
        + 18;
    let end = dom[at..].find('"').expect("closed attribute");
    dom[at..at + end].to_string()
}

/// Takes a `width`×`height` screenshot of `page` into `png`.
pub fn screenshot(browser: &Path, page: &Path, png: &Path, (width, height): (u32, u32)) {
    let out = run(
        browser,
        page,
        &[
            &format!("--screenshot={}", png.display()),
            &format!("--window-size={width},{height}"),
        ],
    );
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

//! A real headless browser (Debian's `chromium`, installed by `.ci/run`) opening a page from
//! a `file://` URL: the DOM after its scripts ran, what it logged to the console, and a
//! screenshot's pixels.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The browser: `$STEPSCOPE_CHROMIUM`, or the first of the usual names on `PATH`.
pub fn chromium() -> PathBuf {
    if let Some(path) = std::env::var_os("STEPSCOPE_CHROMIUM") {
        return PathBuf::from(path);
    }
    let names = ["chromium", "chromium-browser", "google-chrome", "chrome"];
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .flat_map(|dir| names.iter().map(move |name| dir.join(name)))
        .find(|candidate| candidate.is_file())
        .unwrap_or_else(|| {
            panic!(
                "no chromium on PATH: the HTML report is tested in a real browser\nhint: `apt-get install chromium` (.ci/run does), or set STEPSCOPE_CHROMIUM to a Chrome binary"
            )
        })
}

/// A page as the browser rendered it.
pub struct Rendered {
    /// The DOM after the page's scripts ran.
    pub dom: scraper::Html,
    /// Console messages and uncaught errors, one per line.
    pub console: Vec<String>,
    /// Screenshot: width, height and RGBA pixels.
    pub screenshot: (u32, u32, Vec<u8>),
}

fn headless(extra: &[&str], page: &Path, fragment: &str) -> std::process::Output {
    let url = format!(
        "file://{}{fragment}",
        page.canonicalize().expect("the page exists").display()
    );
    let profile = tempfile::tempdir().expect("a profile folder");
    Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=5000",
            "--window-size=1280,1600",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(extra)
        .arg(url)
        .output()
        .expect("chromium runs")
}

/// Opens `page` twice in a 1280×1600 window (so both lay it out alike): once for its DOM
/// and console, once for a screenshot.
pub fn render(page: &Path) -> Rendered {
    render_at(page, "")
}

/// [`render`] with a URL fragment (`#2`: the page's second tab).
pub fn render_at(page: &Path, fragment: &str) -> Rendered {
    let out = headless(&["--dump-dom"], page, fragment);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The page's messages only: Chromium's own pages (`source: chrome://…`) log too, e.g.
    // "Slow network is detected" when a built-in font loads slowly on a busy or offline host.
    let console: Vec<String> = stderr
        .lines()
        .filter(|line| line.contains(":CONSOLE") && !line.contains("source: chrome://"))
        .map(str::to_owned)
        .collect();
    let dom = String::from_utf8(out.stdout).expect("the DOM is UTF-8");
    assert!(dom.contains("<body"), "chromium printed no DOM:\n{stderr}");
    let dir = tempfile::tempdir().expect("a folder for the screenshot");
    let shot = dir.path().join("page.png");
    let arg = format!("--screenshot={}", shot.display());
    let out = headless(&[&arg], page, fragment);
    assert!(
        shot.is_file(),
        "chromium wrote no screenshot:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Rendered {
        dom: scraper::Html::parse_document(&dom),
        console,
        screenshot: decode_png(&shot),
    }
}

fn decode_png(path: &Path) -> (u32, u32, Vec<u8>) {
    let file = std::fs::File::open(path).expect("open the screenshot");
    let mut decoder = png::Decoder::new(std::io::BufReader::new(file));
    decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::ALPHA);
    let mut reader = decoder.read_info().expect("a PNG");
    let mut pixels = vec![0; reader.output_buffer_size().expect("a size")];
    let info = reader.next_frame(&mut pixels).expect("a frame");
    pixels.truncate(info.buffer_size());
    assert_eq!(
        info.color_type,
        png::ColorType::Rgba,
        "RGBA after expansion"
    );
    (info.width, info.height, pixels)
}

impl Rendered {
    /// Text of every element matching `selector`.
    pub fn texts(&self, selector: &str) -> Vec<String> {
        let selector = scraper::Selector::parse(selector).expect("a valid selector");
        self.dom
            .select(&selector)
            .map(|e| e.text().collect::<String>())
            .collect()
    }

    /// The one element matching `selector`.
    #[track_caller]
    pub fn one(&self, selector: &str) -> String {
        let found = self.texts(selector);
        assert_eq!(found.len(), 1, "elements matching `{selector}`: {found:?}");
        found.into_iter().next().expect("one")
    }

    /// An attribute of the one element matching `selector`.
    #[track_caller]
    pub fn attr(&self, selector: &str, name: &str) -> Option<String> {
        let parsed = scraper::Selector::parse(selector).expect("a valid selector");
        let mut found = self.dom.select(&parsed);
        let element = found.next().unwrap_or_else(|| panic!("no `{selector}`"));
        element.value().attr(name).map(str::to_owned)
    }

    /// Elements matching `selector`.
    pub fn count(&self, selector: &str) -> usize {
        self.texts(selector).len()
    }

    /// Screenshot pixels of exactly this colour inside the drawn timeline canvas (its box as
    /// the page measured it, `data-box`: the screenshot has the same layout).
    #[track_caller]
    pub fn timeline_pixels_of(&self, rgb: [u8; 3]) -> usize {
        let text = self
            .attr("canvas.timeline", "data-box")
            .expect("the timeline's box");
        let box_: Vec<u32> = text
            .split(',')
            .map(|v| v.parse().expect("a number"))
            .collect();
        let (width, height, pixels) = &self.screenshot;
        let rows = box_[1]..(box_[1] + box_[3]).min(*height);
        let columns = box_[0]..(box_[0] + box_[2]).min(*width);
        rows.flat_map(|y| columns.clone().map(move |x| (y * width + x) as usize * 4))
            .filter(|at| pixels[*at..*at + 3] == rgb)
            .count()
    }

    /// Share of screenshot pixels that are not the page background (white).
    pub fn inked(&self) -> f64 {
        let pixels = &self.screenshot.2;
        let inked = pixels
            .chunks_exact(4)
            .filter(|p| p[..3] != [255, 255, 255])
            .count();
        inked as f64 / (pixels.len() / 4) as f64
    }

    /// The canvas readback of the timeline: pixels per replay class.
    #[track_caller]
    pub fn painted(&self) -> std::collections::BTreeMap<String, u64> {
        let text = self
            .attr("canvas.timeline", "data-painted")
            .expect("the timeline was drawn (data-painted)");
        text.split(',')
            .map(|pair| {
                let (name, n) = pair.split_once(':').expect("class:pixels");
                (name.to_owned(), n.parse().expect("a count"))
            })
            .collect()
    }

    /// Asserts the page rendered with nothing logged and no script error.
    #[track_caller]
    pub fn assert_clean(&self) {
        assert!(self.console.is_empty(), "console: {:#?}", self.console);
        assert_eq!(
            self.attr("body", "data-rendered").as_deref(),
            Some("ok"),
            "the report script finished"
        );
        assert_eq!(self.attr("body", "data-errors"), None, "script errors");
    }
}

//! Writing to stdout without panicking on a closed pipe.

use crate::app::hinted;
use std::io::Write;
use stepscope_model::text::escape_controls_keep_lines;

/// Writes `text` to stdout. A failure (a full disk behind `> out.json`) is an output that
/// could not be written, as for a file flag: [`is_write_failure`], exit 2.
///
/// # Errors
///
/// The write or flush failed (a closed pipe too: [`is_broken_pipe`] tells it apart).
pub fn print(text: &str) -> Result<(), stepscope_report::ReportError> {
    let mut stdout = std::io::stdout().lock();
    let written = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush());
    written.map_err(|source| stepscope_report::ReportError::Write {
        path: std::path::PathBuf::from("standard output"),
        source,
    })
}

/// Whether the error is a closed pipe (`stepscope … | head`), which is not a failure.
pub fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error
        .chain()
        .filter_map(|cause| cause.downcast_ref::<std::io::Error>())
        .any(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
}

/// Whether the error is an output that could not be written (a report, an export, a
/// table): exit 2, the same as any other problem the user can fix, never the internal
/// error's 1, whichever flag's file it was.
pub fn is_write_failure(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<stepscope_report::ReportError>()
            .is_some()
    })
}

/// Prints `error: …` and each `Caused by: …` to stderr.
#[allow(clippy::print_stderr)]
pub fn print_error(error: &anyhow::Error) {
    let escape = |text: String| escape_controls_keep_lines(&text).into_owned();
    eprintln!("error: {}", escape(error.to_string()));
    for cause in error.chain().skip(1) {
        eprintln!("Caused by: {}", escape(cause.to_string()));
    }
}

/// Whether to colour output on stdout.
pub fn use_color(choice: crate::cli::ColorChoice) -> bool {
    use std::io::IsTerminal;
    match choice {
        crate::cli::ColorChoice::Always => true,
        crate::cli::ColorChoice::Never => false,
        crate::cli::ColorChoice::Auto => {
            std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none()
        }
    }
}

/// Tables wrap to the terminal when stdout is one, and never wrap in pipes and files.
pub fn table_width() -> stepscope_report::terminal::TableWidth {
    use std::io::IsTerminal;
    if std::io::stdout().is_terminal() {
        stepscope_report::terminal::TableWidth::Terminal
    } else {
        stepscope_report::terminal::TableWidth::Unbounded
    }
}

/// Prints a one-line note (what was written where) to stderr, so stdout stays the report.
#[allow(clippy::print_stderr)]
pub fn note(text: &str) {
    eprintln!("{}", escape_controls_keep_lines(text));
}

/// Checks, before any work, that the file a flag names can be created: its folder exists
/// and it is not a folder itself.
///
/// # Errors
///
/// A message naming the flag, the path and the fix.
pub fn check_output_file(flag: &str, path: &std::path::Path) -> anyhow::Result<()> {
    if path.is_dir() {
        return Err(hinted(
            format!("{flag} `{}` is a folder", path.display()),
            format!(
                "name the file to write, e.g. `{}`",
                path.join("report.html").display()
            ),
        ));
    }
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    if !parent.is_dir() {
        return Err(hinted(
            format!(
                "{flag} `{}`: the folder `{}` does not exist",
                path.display(),
                parent.display()
            ),
            format!(
                "create it first (mkdir -p {}), or write the file elsewhere",
                parent.display()
            ),
        ));
    }
    Ok(())
}

//! What every subcommand writes to stdout goes through here, so that no value read from
//! another machine or a file (a hostname, a task name, an IRQ or DMI string) can send
//! control sequences to the terminal: pages are escaped with [`escape_page`]. JSON needs no
//! escaping here (serde_json escapes control characters itself).
//!
//! Output goes through one [`BufWriter`] of [`BUFFER_BYTES`], so that a document of tens of
//! megabytes is written in large blocks, not a write(2) per line (stdout alone is
//! line-buffered). A reader that goes away early (`lowlat audit --json | head`) makes the
//! write fail with a broken pipe, which `main` treats as a normal end.

use anyhow::Result;
use std::io::{BufWriter, StdoutLock, Write};

use crate::report::shown::{Out, Shown};
use crate::text::escape_page;

/// Writes out what a command shows, in order (lines on stderr, pages on stdout), and returns
/// its exit code.
pub(crate) fn show(shown: Shown) -> Result<u8> {
    for out in shown.out {
        match out {
            Out::Say(level, line) => super::messages::emit(level, format_args!("{line}")),
            Out::Text(text) => print(&text)?,
            Out::Json(json) => write(json.as_bytes())?,
        }
    }
    Ok(match shown.stopped {
        true => super::exit::ERROR,
        false => super::exit::found(shown.failures),
    })
}

/// Writes the page `text` to stdout, control characters escaped.
pub(crate) fn print(text: &str) -> Result<()> {
    write(escape_page(text).as_bytes())
}

/// Writes `bytes` to stdout as they are.
fn write(bytes: &[u8]) -> Result<()> {
    let mut stdout = stdout();
    stdout.write_all(bytes)?;
    stdout.flush()?;
    Ok(())
}

/// Writes `text` to stdout as it is and flushes, so that a pipe sees it at once: for text
/// that escapes itself or must not be escaped (an HTML page, a JSON line, a screen that
/// clears the terminal).
pub(crate) fn print_raw(text: &str) -> Result<()> {
    let mut stdout = stdout();
    stdout.write_all(text.as_bytes())?;
    stdout.flush()?;
    Ok(())
}

/// Writes `document` to stdout as pretty JSON, with a final newline.
pub(crate) fn print_json<T: serde::Serialize>(document: &T) -> Result<()> {
    let mut stdout = stdout();
    serde_json::to_writer_pretty(&mut stdout, document).map_err(std::io::Error::from)?;
    writeln!(stdout)?;
    stdout.flush()?;
    Ok(())
}

/// The size of the output buffer, bytes.
const BUFFER_BYTES: usize = 1 << 16;

/// Stdout, locked and buffered. The caller flushes it and reports the error: dropping a
/// `BufWriter` would discard it.
fn stdout() -> BufWriter<StdoutLock<'static>> {
    BufWriter::with_capacity(BUFFER_BYTES, std::io::stdout().lock())
}

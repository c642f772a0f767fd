//! What every subcommand writes to stdout goes through here, so that no value read from
//! another machine or a file (a hostname, a task name, an IRQ or DMI string) can send
//! control sequences to the terminal: pages are escaped with [`escape_page`]. JSON needs no
//! escaping here (serde_json escapes control characters itself).

use anyhow::Result;
use std::io::Write;

use crate::text::escape_page;

/// Writes the page `text` to stdout, control characters escaped.
pub(crate) fn print(text: &str) -> Result<()> {
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(escape_page(text).as_bytes())?;
    stdout.flush()?;
    Ok(())
}

/// Writes `document` to stdout as pretty JSON, with a final newline.
pub(crate) fn print_json<T: serde::Serialize>(document: &T) -> Result<()> {
    let mut stdout = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut stdout, document).map_err(std::io::Error::from)?;
    writeln!(stdout)?;
    stdout.flush()?;
    Ok(())
}

//! What every subcommand writes to stdout goes through here.

use anyhow::Result;

/// Writes `text` to stdout.
pub fn print(text: &str) -> Result<()> {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    stdout.flush()?;
    Ok(())
}

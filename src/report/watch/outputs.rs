//! Where each interval of `lowlat watch` goes: the page served over HTTP (`--listen`), the
//! file node_exporter reads (`--textfile`), and what stdout gets (a JSON line, the one
//! exposition of `--once`, or the screen), which is handed back for the command line to print.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use super::exposition::Exporter;
use super::view;
use crate::machine::CpuSet;
use crate::sysroot::{Durability, Perms, SysRoot, write_file_atomically};
use crate::watch::Tick;
use crate::watch::serve::{self, OutputError, SharedPage};

/// The outputs asked for.
pub(crate) struct Asked {
    /// Serve the exposition at this address (`--listen`).
    pub listen: Option<String>,
    /// Replace this file with the exposition each interval (`--textfile`).
    pub textfile: Option<PathBuf>,
    /// One JSON line per interval on stdout (`--json`).
    pub json: bool,
    /// One sample only: its exposition on stdout, or its JSON line (`--once`).
    pub once: bool,
    /// The sources shown per CPU before the rest are "other" (`--top`).
    pub top: usize,
    /// Whether stdout is a terminal, cleared before each screen.
    pub terminal: bool,
}

/// What one interval prints on stdout.
pub(crate) enum Shown {
    /// Text printed as it is (a JSON line, or a screen that clears the terminal first, each
    /// with its newline), flushed at once so that a pipe sees each interval.
    Raw(String),
    /// A page, escaped as every page is (the exposition, or the screen on a pipe).
    Page(String),
}

/// Why an interval could not be written.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ShowError {
    /// `--textfile` could not be replaced.
    #[error("--textfile {}", file.display())]
    Textfile {
        /// The file.
        file: PathBuf,
        /// Why.
        source: crate::sysroot::WriteError,
    },
    /// The JSON line could not be made.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

/// What stdout gets each interval.
enum Stdout {
    /// Nothing: the outputs are the page served or the textfile.
    Nothing,
    /// One JSON line, on this host.
    Json(String),
    /// The exposition (`--once`).
    Exposition,
    /// The screen of these CPUs, after clearing the terminal or not.
    Screen {
        /// The watched CPUs, as a list.
        isolated: String,
        /// Whether the terminal is cleared first.
        clear: bool,
    },
}

/// The outputs of a watch, opened.
pub(crate) struct Outputs {
    exporter: Exporter,
    page: SharedPage,
    textfile: Option<PathBuf>,
    stdout: Stdout,
    /// Whether the last interval found a setting drifted.
    pub drifted: bool,
}

impl Outputs {
    /// Opens what `asked` names for a watch of `isolated` on `root`'s host: `--textfile`'s
    /// directory checked, `--listen`'s server started. Returns the address it listens on.
    pub(crate) fn open(
        asked: Asked,
        root: &SysRoot,
        isolated: &CpuSet,
    ) -> Result<(Outputs, Option<String>), OutputError> {
        if let Some(file) = &asked.textfile {
            serve::check_textfile(file)?;
        }
        let page: SharedPage = Arc::new(Mutex::new(String::new()));
        let listening = (asked.listen.as_deref())
            .map(|addr| serve::listen(addr, &page))
            .transpose()?;
        let screen = asked.listen.is_none() && asked.textfile.is_none();
        let stdout = match (asked.json, asked.once) {
            (true, _) => Stdout::Json(crate::document::host_name(root)),
            (false, true) => Stdout::Exposition,
            (false, false) if screen => Stdout::Screen {
                isolated: isolated.to_list(),
                clear: asked.terminal,
            },
            (false, false) => Stdout::Nothing,
        };
        let outputs = Outputs {
            exporter: Exporter::new(asked.top),
            page,
            textfile: asked.textfile,
            stdout,
            drifted: false,
        };
        Ok((outputs, listening))
    }

    /// Writes `tick` to the page served and the textfile, and returns what stdout gets.
    pub(crate) fn show(&mut self, tick: &Tick) -> Result<Option<Shown>, ShowError> {
        self.drifted = tick.drift.is_some_and(|d| d.settings() > 0);
        let exposition = self.exporter.render(tick);
        if let Ok(mut shared) = self.page.lock() {
            shared.clone_from(&exposition);
        }
        if let Some(file) = &self.textfile {
            let bytes = exposition.as_bytes();
            write_file_atomically(file, bytes, Perms::mode(0o644), Durability::Unsynced).map_err(
                |source| ShowError::Textfile {
                    file: file.clone(),
                    source,
                },
            )?;
        }
        Ok(match &self.stdout {
            Stdout::Nothing => None,
            Stdout::Json(host) => Some(Shown::Raw(view::json_line(tick, host)? + "\n")),
            Stdout::Exposition => Some(Shown::Page(exposition)),
            Stdout::Screen { isolated, clear } => {
                let page = view::text(tick, isolated);
                Some(if *clear {
                    Shown::Raw(format!("\x1b[H\x1b[2J{page}\n"))
                } else {
                    Shown::Page(page)
                })
            }
        })
    }
}

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
#[derive(Debug)]
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::watch::sample::{CpuSample, Sample};
    use crate::watch::tasks::Appeared;

    fn open(root: &SysRoot, textfile: Option<PathBuf>, json: bool, once: bool) -> Outputs {
        let asked = Asked {
            listen: None,
            textfile,
            json,
            once,
            top: 5,
            terminal: true,
        };
        let (outputs, listening) = Outputs::open(asked, root, &CpuSet::parse_list("3").unwrap())
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(listening.is_none());
        outputs
    }

    #[test]
    fn each_interval_goes_to_the_textfile_and_stdout_gets_what_was_asked() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("proc/sys/kernel")).unwrap();
        std::fs::write(dir.path().join("proc/sys/kernel/hostname"), "node1\n").unwrap();
        let root = SysRoot::dir(dir.path());
        let sample = Sample {
            sources: vec!["LOC".to_string()].into(),
            cpus: vec![CpuSample {
                cpu: 3,
                interrupts: [(0, 7)].into_iter().collect(),
                ..CpuSample::default()
            }],
            forks: None,
            warnings: vec![],
        };
        let tasks = Appeared::default();
        let tick = Tick {
            at: std::time::Duration::ZERO,
            sample: &sample,
            previous: None,
            drift: None,
            tasks: &tasks,
            noise: None,
            causes: None,
        };

        // --textfile alone: the file holds the exposition, and stdout gets nothing.
        let textfile = dir.path().join("lowlat.prom");
        let mut outputs = open(&root, Some(textfile.clone()), false, false);
        assert!(outputs.show(&tick).unwrap().is_none());
        assert!(!outputs.drifted);
        let exposition = std::fs::read_to_string(&textfile).unwrap();
        assert!(exposition.contains("lowlat_isolated_cpu_interrupts_total"));

        // --once: the same exposition, printed as a page.
        let shown = open(&root, None, false, true).show(&tick).unwrap();
        assert!(matches!(shown, Some(Shown::Page(page)) if page == exposition));

        // --json (also with --once): one line of this host, with its newline.
        let Some(Shown::Raw(line)) = open(&root, None, true, true).show(&tick).unwrap() else {
            panic!("no JSON line");
        };
        assert!(
            line.ends_with("}\n") && line.matches('\n').count() == 1,
            "{line}"
        );
        assert!(line.contains(r#""host":"node1""#), "{line}");

        // The screen, on a terminal: cleared first.
        let Some(Shown::Raw(screen)) = open(&root, None, false, false).show(&tick).unwrap() else {
            panic!("no screen");
        };
        assert!(screen.starts_with("\x1b[H\x1b[2J"), "{screen:?}");

        // A textfile that cannot be replaced names the flag.
        let mut outputs = open(&root, Some(textfile.clone()), false, false);
        outputs.textfile = Some(dir.path().join("missing/lowlat.prom"));
        let error = outputs.show(&tick).unwrap_err().to_string();
        assert!(error.starts_with("--textfile "), "{error}");
    }
}

//! A machine from another tool's bundle (`--sosreport`, `--must-gather`): made into a private
//! machine tree that lives as long as the value, read as `--root` reads a tree, with what is
//! worth saying of it.

use std::path::Path;

use super::mustgather::{self, MustGatherError, MustGatherNode};
use super::sosreport::{self, SosReport, SosReportError};
use crate::text::voice::Level;

/// Another tool's bundle, unpacked into a machine tree.
#[derive(Debug)]
pub(crate) enum Foreign {
    /// A sosreport.
    Sos(SosReport),
    /// One node of an OpenShift must-gather.
    Node(MustGatherNode),
}

/// Why the bundle could not be read, under the flag that named it.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ForeignError {
    /// `--sosreport`.
    #[error("--sosreport")]
    Sos(#[from] SosReportError),
    /// `--must-gather`.
    #[error("--must-gather")]
    MustGather(#[from] MustGatherError),
}

impl Foreign {
    /// Opens the sosreport at `sosreport` or the node `node` of the must-gather in
    /// `must_gather` (the flags exclude each other); `None` without either.
    pub(crate) fn open(
        sosreport: Option<&Path>,
        must_gather: Option<&Path>,
        node: Option<&str>,
    ) -> Result<Option<Self>, ForeignError> {
        Ok(match (sosreport, must_gather) {
            (Some(path), _) => Some(Foreign::Sos(sosreport::open(path)?)),
            (None, Some(dir)) => Some(Foreign::Node(mustgather::open(dir, node)?)),
            (None, None) => None,
        })
    }

    /// The machine tree, laid out like `/`.
    pub(crate) fn dir(&self) -> &Path {
        match self {
            Foreign::Sos(report) => &report.dir,
            Foreign::Node(node) => &node.dir,
        }
    }

    /// What is worth saying of the bundle, each line with its flag: the reader's notes, then
    /// what the bundle lacks.
    pub(crate) fn said(&self) -> Vec<(Level, String)> {
        match self {
            Foreign::Sos(report) => {
                let notes = (report.notes.iter())
                    .map(|note| (Level::Warning, format!("--sosreport: {note}")));
                let lacks = (report.lacks.iter()).map(|lack| {
                    (
                        Level::Warning,
                        format!("--sosreport: the bundle lacks {lack}"),
                    )
                });
                notes.chain(lacks).collect()
            }
            Foreign::Node(node) => {
                let notes = (node.notes().into_iter())
                    .map(|note| (Level::Note, format!("--must-gather: {note}")));
                let lacks = (node.lacks.iter()).map(|lack| {
                    let line = format!("--must-gather: the node's snapshot lacks {lack}");
                    (Level::Warning, line)
                });
                notes.chain(lacks).collect()
            }
        }
    }
}

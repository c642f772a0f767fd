//! A sosreport as `lowlat report` draws it: its machine read as `--sosreport` reads it, made
//! into the inventory document, and audited against a profile, made into the audit document,
//! as `lowlat --sosreport BUNDLE inventory --json` and `audit --json` print them.

use std::path::Path;

use crate::audit::{self, Profile};
use crate::machine::Machine;
use crate::snapshot::sosreport::{self, SosReportError};
use crate::sysroot::SysRoot;
use crate::tuning::partition::PartitionError;

/// The documents of one sosreport, and what its reader said of it.
#[derive(Debug)]
pub(crate) struct BundleDocuments {
    /// The documents, each with the name the report gives it (`BUNDLE: inventory`), as JSON.
    pub(crate) documents: Vec<(String, String)>,
    /// What the reader said of the bundle and what it lacks, one line each (untrusted text,
    /// escaped where it names the bundle's files).
    pub(crate) notes: Vec<String>,
}

/// Why a sosreport gave no documents.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BundleError {
    /// The bundle cannot be read.
    #[error(transparent)]
    SosReport(#[from] SosReportError),
    /// The audit's partition cannot be formed on the bundle's machine.
    #[error("{}: cannot audit it: {source}", crate::text::escape_controls(&.file.display().to_string()))]
    Partition {
        /// The bundle.
        file: std::path::PathBuf,
        /// Why.
        source: PartitionError,
    },
    /// A document could not be written as JSON.
    #[error("{0}")]
    Json(#[from] serde_json::Error),
}

/// Reads the sosreport at `path` and makes its inventory document and its audit document
/// against `profile` (every finding shown).
pub(crate) fn documents(path: &Path, profile: &Profile) -> Result<BundleDocuments, BundleError> {
    let bundle = sosreport::open(path)?;
    let machine = Machine::read(&SysRoot::dir(&bundle.dir));
    let partition =
        audit::partition::choose(&machine, None).map_err(|source| BundleError::Partition {
            file: path.to_path_buf(),
            source,
        })?;
    let result = audit::run(&machine, profile, &partition);
    let name = path.display().to_string();
    let inventory = super::inventory::document(&machine).to_json()?;
    let audit =
        super::audit::document(&machine, &result, profile.info, &Default::default()).to_json()?;
    let mut notes = bundle.notes.clone();
    notes.extend(
        bundle
            .lacks
            .iter()
            .map(|lack| format!("the bundle lacks {lack}")),
    );
    Ok(BundleDocuments {
        documents: vec![
            (format!("{name}: inventory"), inventory),
            (format!("{name}: audit"), audit),
        ],
        notes,
    })
}

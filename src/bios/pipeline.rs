//! The steps of `lowlat bios` (and of `audit --bmc`), from typed inputs to typed results: log
//! in to the BMC and read its BIOS ([`connect`]), resolve the values asked ([`Wanted::changes`]),
//! stage a change once its journal is written and say whether it waits for a reset
//! ([`apply`]), stage a journal's values again ([`revert`]). Nothing here prints but the
//! warning of a password sent over plain HTTP: `cli/bios.rs` turns the flags into these inputs
//! and prints what comes back.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use super::intents::{self, BiosChange, IntentError};
use super::redfish::{Bmc, Credentials, Endpoint, RedfishError, Trust};
use super::settings::{self, BiosJournal, BiosStatus};
use super::{BiosError, BiosState, parse_document};
use crate::document::{Document, Kind, LayoutError};
use crate::text::voice::warning;

/// The environment variable a password may come from instead of `--password-file`.
const PASSWORD_ENV: &str = "LOWLAT_BMC_PASSWORD";
/// The environment variable the user name may come from instead of `--user`.
const USER_ENV: &str = "LOWLAT_BMC_USER";
/// The most bytes of a `--password-file` read: a password is far shorter, and a file such as
/// /dev/zero is not read until memory runs out.
const PASSWORD_FILE_LIMIT: u64 = 4096;

/// How to reach and log in to a BMC, and what to trust.
#[derive(Debug, Clone)]
pub(crate) struct Login {
    /// The BMC: `https://HOST[:PORT]`.
    pub url: String,
    /// The account; `None`: `$LOWLAT_BMC_USER`.
    pub user: Option<String>,
    /// The file whose first line is the password; `None`: `$LOWLAT_BMC_PASSWORD`.
    pub password_file: Option<PathBuf>,
    /// A PEM file of the CA that signed the BMC's certificate; `None`: the public web roots.
    pub ca_file: Option<PathBuf>,
    /// Whether the BMC's certificate is not verified at all.
    pub insecure: bool,
    /// How long one request may take.
    pub timeout: Duration,
    /// The system to use (its Redfish `Id`); `None`: the BMC's only one.
    pub system: Option<String>,
}

/// The values to stage or check: `--set`'s, after those of a plan's BIOS part.
#[derive(Debug, Default)]
pub(crate) struct Wanted {
    /// INTENT=VALUE or ATTRIBUTE=VALUE, as given.
    pub sets: Vec<String>,
    /// The BIOS part of `--plan FILE`.
    pub planned: Option<PlannedBios>,
}

/// The BIOS part of a plan, as `bios apply --plan` and `bios verify --plan` take it.
#[derive(Debug)]
pub(crate) struct PlannedBios {
    /// How messages name the plan: `--plan FILE`.
    pub shown: String,
    /// The BMC the plan was made from.
    pub bmc: String,
    /// The system the plan was made from.
    pub system_uri: String,
    /// The requests planned (INTENT=VALUE).
    pub intents: Vec<String>,
}

/// Why a step of `lowlat bios` failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BiosJobError {
    /// No `--user` and no `$LOWLAT_BMC_USER`.
    #[error("--user NAME: say which BMC account to use (or set {USER_ENV})")]
    NoUser,
    /// No `--password-file` and no `$LOWLAT_BMC_PASSWORD`.
    #[error(
        "no password: give --password-file FILE or set {PASSWORD_ENV} (never on the command line)"
    )]
    NoPassword,
    /// The password file cannot be read.
    #[error("--password-file {}", file.display())]
    PasswordRead {
        /// The file.
        file: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The password file holds no usable first line.
    #[error("--password-file {}: {problem}", file.display())]
    PasswordLine {
        /// The file.
        file: PathBuf,
        /// What is wrong with its first line.
        problem: PasswordProblem,
    },
    /// The CA file cannot be read.
    #[error("--ca-file {}", file.display())]
    CaFile {
        /// The file.
        file: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The BMC could not be reached or refused a request.
    #[error(transparent)]
    Redfish(#[from] RedfishError),
    /// The BIOS could not be read.
    #[error(transparent)]
    Read(#[from] BiosError),
    /// A plan or journal made for another BMC or system.
    #[error("{shown} {bmc} system {system_uri}, not {here_bmc} system {here_uri}")]
    OtherSystem {
        /// The file and what it says (`--plan FILE: its BIOS part was planned for`).
        shown: String,
        /// The BMC it names.
        bmc: String,
        /// The system it names.
        system_uri: String,
        /// The BMC logged in to.
        here_bmc: String,
        /// Its system.
        here_uri: String,
    },
    /// A value the BMC's registry does not accept.
    #[error("--set {0}")]
    Resolve(IntentError),
    /// The change was refused, in whole or in part.
    #[error(
        "the BMC refused the change, so it staged none or part of it: `lowlat bios verify` shows which, and `lowlat bios revert --journal {}` stages the values before again",
        journal.display()
    )]
    Stage {
        /// The journal written before.
        journal: PathBuf,
        /// The BMC's refusal.
        source: RedfishError,
    },
    /// The revert was refused.
    #[error("the BMC refused the revert; `lowlat bios verify` shows what is staged now")]
    Restage(#[source] RedfishError),
    /// The journal cannot be created (it must not exist yet).
    #[error("--journal {}: cannot create it (it must not exist yet)", file.display())]
    JournalCreate {
        /// The file.
        file: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The journal cannot be written or synced.
    #[error("--journal {}", file.display())]
    JournalWrite {
        /// The file.
        file: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A document cannot be written as JSON.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// The journal cannot be read.
    #[error("--journal {}", file.display())]
    JournalRead {
        /// The file.
        file: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The `bios` document cannot be written.
    #[error("-o {}: cannot write the document", file.display())]
    Save {
        /// The file.
        file: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// `bios apply` has values to stage and no journal to record the values they replace in.
    #[error("--journal FILE: say where to record the values replaced")]
    NoJournal,
    /// The journal is not a `bios-journal` document.
    #[error("--journal {}", file.display())]
    JournalLayout {
        /// The file.
        file: PathBuf,
        /// Why.
        source: LayoutError,
    },
}

/// What is wrong with a password file's first line.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PasswordProblem {
    /// No newline in the bytes read.
    #[error(
        "no end of line in the first {PASSWORD_FILE_LIMIT} bytes; put the password alone on the first line"
    )]
    NoEndOfLine,
    /// Not UTF-8.
    #[error("the first line is not UTF-8 text")]
    NotUtf8,
    /// Empty.
    #[error("the first line is empty; put the password there")]
    Empty,
}

/// Writes `state`'s `bios` document to `file` (`bios read -o FILE`).
pub(crate) fn save(state: &BiosState, file: &Path) -> Result<(), BiosJobError> {
    std::fs::write(file, state.document().to_json()?).map_err(|source| BiosJobError::Save {
        file: file.to_path_buf(),
        source,
    })
}

/// Logs in to the BMC `login` names and reads the BIOS of its system. Plain HTTP is warned
/// of before the password goes out (the URL is not echoed: user information in it would be
/// the password).
pub(crate) fn connect(login: &Login) -> Result<(Bmc, BiosState), BiosJobError> {
    let endpoint = endpoint(login)?;
    if login.url.starts_with("http://") {
        warning!(
            "--bmc http://…: plain HTTP sends the password unencrypted; use https:// outside a test bench"
        );
    }
    let bmc = Bmc::new(&endpoint)?;
    let state = super::read(&bmc, login.system.as_deref())?;
    Ok((bmc, state))
}

/// Where and how to log in: the user, the password and the trust `login` names.
fn endpoint(login: &Login) -> Result<Endpoint, BiosJobError> {
    let user = match &login.user {
        Some(user) => user.clone(),
        None => std::env::var(USER_ENV).map_err(|_| BiosJobError::NoUser)?,
    };
    let password = password(login.password_file.as_deref())?;
    let trust = match (&login.ca_file, login.insecure) {
        (Some(file), _) => {
            Trust::CaPem(std::fs::read(file).map_err(|source| BiosJobError::CaFile {
                file: file.clone(),
                source,
            })?)
        }
        (None, true) => Trust::Insecure,
        (None, false) => Trust::PublicRoots,
    };
    Ok(Endpoint {
        url: login.url.clone(),
        credentials: Credentials::new(user, password),
        trust,
        timeout: login.timeout,
    })
}

/// The password: the first line of `file`, else `$LOWLAT_BMC_PASSWORD`.
fn password(file: Option<&Path>) -> Result<String, BiosJobError> {
    let Some(file) = file else {
        return std::env::var(PASSWORD_ENV).map_err(|_| BiosJobError::NoPassword);
    };
    let line = |problem| BiosJobError::PasswordLine {
        file: file.to_path_buf(),
        problem,
    };
    let mut bytes = Vec::new();
    std::fs::File::open(file)
        .and_then(|f| f.take(PASSWORD_FILE_LIMIT).read_to_end(&mut bytes))
        .map_err(|source| BiosJobError::PasswordRead {
            file: file.to_path_buf(),
            source,
        })?;
    let end = bytes.iter().position(|&b| b == b'\n');
    if end.is_none() && bytes.len() as u64 == PASSWORD_FILE_LIMIT {
        return Err(line(PasswordProblem::NoEndOfLine));
    }
    let first = &bytes[..end.unwrap_or(bytes.len())];
    let text = std::str::from_utf8(first.strip_suffix(b"\r").unwrap_or(first))
        .map_err(|_| line(PasswordProblem::NotUtf8))?;
    if text.is_empty() {
        return Err(line(PasswordProblem::Empty));
    }
    Ok(text.to_string())
}

/// Refuses a plan or journal (`shown`: the file and what it says) made for a BMC or system
/// other than `state`'s.
fn same_system(
    state: &BiosState,
    shown: impl FnOnce() -> String,
    bmc: &str,
    system_uri: &str,
) -> Result<(), BiosJobError> {
    if bmc == state.bmc && system_uri == state.system.uri {
        return Ok(());
    }
    Err(BiosJobError::OtherSystem {
        shown: shown(),
        bmc: bmc.to_string(),
        system_uri: system_uri.to_string(),
        here_bmc: state.bmc.clone(),
        here_uri: state.system.uri.clone(),
    })
}

impl Wanted {
    /// Each request, the plan's first, resolved through the BMC's registry; the plan must have
    /// been made from this BMC's system, and the first refusal is the error.
    pub(crate) fn changes(&self, state: &BiosState) -> Result<Vec<BiosChange>, BiosJobError> {
        let planned = self.planned.iter().flat_map(|part| &part.intents);
        if let Some(part) = &self.planned {
            let shown = || format!("{}: its BIOS part was planned for", part.shown);
            same_system(state, shown, &part.bmc, &part.system_uri)?;
        }
        planned
            .chain(&self.sets)
            .map(|r| intents::resolve(state, r).map_err(BiosJobError::Resolve))
            .collect()
    }
}

/// Writes `journal` of `state`'s BMC, as a `bios-journal` document, to `file`, which must not
/// exist yet; synced, so that it outlives a crash during the change.
fn write_journal(
    state: &BiosState,
    journal: &BiosJournal,
    file: &Path,
) -> Result<(), BiosJobError> {
    use std::io::Write;
    let json = Document::new(Kind::BiosJournal, state.host(), journal).to_json()?;
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(file)
        .map_err(|source| BiosJobError::JournalCreate {
            file: file.to_path_buf(),
            source,
        })?;
    out.write_all(json.as_bytes())
        .and_then(|()| out.sync_all())
        .map_err(|source| BiosJobError::JournalWrite {
            file: file.to_path_buf(),
            source,
        })
}

/// What `bios apply` staged, or would stage.
pub(crate) struct Staged {
    /// Each value to change, with the one it replaces, as journaled.
    pub journal: BiosJournal,
    /// Whether the values were staged: not a dry run, and something to change.
    pub staged: bool,
    /// Whether the staged values wait for the next reset (the BIOS read again, some value is
    /// not current yet); `false` when nothing was staged.
    pub reboot_required: bool,
}

/// `bios apply` on `state`'s BMC (read as `login` says): the `changes` that differ, journaled
/// to `journal_file` (which must not exist yet) and staged. A dry run, or nothing to change,
/// stages nothing.
pub(crate) fn apply(
    bmc: &Bmc,
    state: &BiosState,
    login: &Login,
    changes: &[BiosChange],
    journal_file: Option<&Path>,
    dry_run: bool,
) -> Result<Staged, BiosJobError> {
    let journal = settings::journal(state, &settings::needed(state, changes));
    if dry_run || journal.entries.is_empty() {
        return Ok(Staged {
            journal,
            staged: false,
            reboot_required: false,
        });
    }
    let file = journal_file.ok_or(BiosJobError::NoJournal)?;
    write_journal(state, &journal, file)?;
    let values: Vec<_> = (journal.entries.iter())
        .map(|e| (e.attribute.clone(), e.wanted.clone()))
        .collect();
    settings::stage(bmc, state, &values).map_err(|source| BiosJobError::Stage {
        journal: file.to_path_buf(),
        source,
    })?;
    let after = super::read(bmc, login.system.as_deref())?;
    let reboot_required =
        (settings::verify(&after, changes, None).iter()).any(|c| c.outcome != BiosStatus::Ok);
    Ok(Staged {
        journal,
        staged: true,
        reboot_required,
    })
}

/// The journal `bios apply` wrote to `file`.
fn read_journal(file: &Path) -> Result<BiosJournal, BiosJobError> {
    let text = std::fs::read_to_string(file).map_err(|source| BiosJobError::JournalRead {
        file: file.to_path_buf(),
        source,
    })?;
    parse_document(&text, Kind::BiosJournal).map_err(|source| BiosJobError::JournalLayout {
        file: file.to_path_buf(),
        source,
    })
}

/// `bios revert`: the journal `file` read, then the values it replaced staged again on the BMC
/// `login` names, which must be the BMC and system it records; returns them.
pub(crate) fn revert(login: &Login, file: &Path) -> Result<Vec<(String, Value)>, BiosJobError> {
    let journal = read_journal(file)?;
    let (bmc, state) = connect(login)?;
    let shown = || format!("--journal {}: it records", file.display());
    same_system(&state, shown, &journal.bmc, &journal.system_uri)?;
    let values = settings::restoring(&journal);
    settings::stage(&bmc, &state, &values).map_err(BiosJobError::Restage)?;
    Ok(values)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn password_of(bytes: &[u8]) -> Result<String, BiosJobError> {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("password");
        std::fs::write(&file, bytes).unwrap();
        password(Some(&file))
    }

    #[test]
    fn the_password_is_the_first_line_without_its_line_end() {
        assert_eq!(password_of(b"s3cret\r\nnext\n").unwrap(), "s3cret");
        assert_eq!(password_of(b"s3cret").unwrap(), "s3cret");
    }

    #[test]
    fn an_empty_non_utf8_or_endless_first_line_is_refused_naming_the_file() {
        let problem = |bytes: &[u8]| match password_of(bytes) {
            Err(BiosJobError::PasswordLine { problem, .. }) => problem.to_string(),
            other => panic!("{other:?}"),
        };
        assert!(problem(b"\nsecond\n").contains("the first line is empty"));
        assert!(problem(b"\xff\xfe\n").contains("not UTF-8"));
        let endless = vec![b'x'; PASSWORD_FILE_LIMIT as usize + 10];
        assert!(problem(&endless).contains("no end of line in the first 4096 bytes"));
        let missing = password(Some(Path::new("/nonexistent/password"))).unwrap_err();
        assert_eq!(missing.to_string(), "--password-file /nonexistent/password");
    }
}

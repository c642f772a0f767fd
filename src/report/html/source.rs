//! The documents a report is made of: any lowlat JSON document (one per file, or one per line
//! for `watch --json` streams), told apart by the envelope's `kind`.

use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use super::embed::{self, EmbedError};
use crate::document::{Header, Kind};
use crate::text;

/// The most characters of a host name shown: the longest DNS name (RFC 1035, 253).
const HOST_SHOWN: usize = 253;
/// The most characters of a document's name (its path, or its name in an earlier report)
/// shown.
const NAME_SHOWN: usize = 1024;

/// One document read for the report.
#[derive(Debug, Clone)]
pub struct Source {
    /// Where it came from (the path as given, with `:LINE` for a line of a stream).
    pub name: String,
    /// Its envelope.
    pub header: Header,
    /// The whole document, as read (its JSON text, untouched).
    pub raw: String,
}

/// Why a file cannot go into a report.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// A report whose embedded documents cannot be read.
    #[error("{name}: {error}")]
    Embedded {
        /// The report file.
        name: String,
        /// What is wrong with it.
        error: EmbedError,
    },
    /// Not JSON.
    #[error("{name}: not a JSON document ({error}); give files written by lowlat --json")]
    Json {
        /// The file (and line).
        name: String,
        /// What the parser said.
        error: serde_json::Error,
    },
    /// JSON without the envelope, or of a kind this lowlat does not know.
    #[error(
        "{name}: not a lowlat document ({error}); every document lowlat writes starts with \
         schema_version, kind, tool, created and host"
    )]
    Envelope {
        /// The file (and line).
        name: String,
        /// What was missing or unknown.
        error: serde_json::Error,
    },
    /// A layout version newer than this lowlat's.
    #[error(
        "{name}: {kind} document has schema_version {found}, this lowlat reads up to {}; \
         render it with the lowlat that wrote it",
        kind.schema_version()
    )]
    Version {
        /// The file (and line).
        name: String,
        /// Its kind.
        kind: Kind,
        /// The version found.
        found: u32,
    },
    /// The body lacks a field the report draws.
    #[error(
        "{name}: {kind} document lacks what the report draws (at {}: {}); give a document \
         written by this lowlat",
        error.path(),
        error.inner()
    )]
    Body {
        /// The file (and line).
        name: String,
        /// Its kind.
        kind: Kind,
        /// What serde said, with the path of the field.
        error: serde_path_to_error::Error<serde_json::Error>,
    },
}

impl Source {
    /// Reads the documents in `text`: one JSON document, one per non-empty line, or the
    /// documents embedded in a report (each keeps the name it had there).
    pub fn parse_all(name: &str, text: &str) -> Result<Vec<Source>, SourceError> {
        if text.trim_start().starts_with("<!DOCTYPE html>") {
            let documents = embed::unpack(text).map_err(|error| SourceError::Embedded {
                name: name.to_string(),
                error,
            })?;
            return documents
                .into_iter()
                .map(|(name, raw)| Source::from_raw(name, raw))
                .collect();
        }
        match serde_json::from_str::<&RawValue>(text) {
            Ok(raw) => Ok(vec![Source::from_raw(
                name.to_string(),
                raw.get().to_string(),
            )?]),
            Err(error) if text.trim().lines().nth(1).is_none() => Err(SourceError::Json {
                name: name.to_string(),
                error,
            }),
            Err(_) => text
                .lines()
                .enumerate()
                .filter(|(_, line)| !line.trim().is_empty())
                .map(|(i, line)| {
                    let name = format!("{name}:{}", i + 1);
                    match serde_json::from_str::<&RawValue>(line) {
                        Ok(raw) => Source::from_raw(name, raw.get().to_string()),
                        Err(error) => Err(SourceError::Json { name, error }),
                    }
                })
                .collect(),
        }
    }

    /// The source `raw` named `name`. The name and the header's host are what the page shows
    /// (in its title, tables and legends, about ten times), so they are cut to
    /// [`NAME_SHOWN`] and [`HOST_SHOWN`] characters; the document itself is kept whole.
    fn from_raw(name: String, raw: String) -> Result<Source, SourceError> {
        let name = text::shorten(&name, NAME_SHOWN).into_owned();
        let mut header =
            serde_json::from_str::<Header>(&raw).map_err(|error| SourceError::Envelope {
                name: name.clone(),
                error,
            })?;
        header.host = text::shorten(&header.host, HOST_SHOWN).into_owned();
        if header.schema_version > header.kind.schema_version() {
            return Err(SourceError::Version {
                name,
                kind: header.kind,
                found: header.schema_version,
            });
        }
        Ok(Source { name, header, raw })
    }

    /// The body as the view `T` a section draws.
    pub(crate) fn view<T: DeserializeOwned>(&self) -> Result<T, SourceError> {
        let mut json = serde_json::Deserializer::from_str(&self.raw);
        serde_path_to_error::deserialize(&mut json).map_err(|error| SourceError::Body {
            name: self.name.clone(),
            kind: self.header.kind,
            error,
        })
    }

    /// How legends name it: the file with its directory (`before/jitter.json`, since bundles
    /// hold files of the same name) and the host.
    pub(crate) fn label(&self) -> String {
        let parts: Vec<&str> = self.name.rsplit('/').take(2).collect();
        let short: Vec<&str> = parts.into_iter().rev().collect();
        format!("{} ({})", short.join("/"), self.header.host)
    }
}

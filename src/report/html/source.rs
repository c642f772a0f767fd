//! The documents a report is made of: any lowlat JSON document (one per file, or one per line
//! for `watch --json` streams), told apart by the envelope's `kind`.

use std::ops::Range;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use super::embed::{self, Budget, EmbedError};
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
    /// The whole document, as read (its JSON text, untouched): where it lies in the text of
    /// its file, shared by the documents of that file (a report's thousands of documents are
    /// not copied out of it).
    raw: Shared,
}

/// A document's text: a range of the text it was read from.
#[derive(Debug, Clone)]
struct Shared {
    /// The whole text read (a file, or the documents inflated from a report).
    text: Arc<String>,
    /// Where the document lies in it.
    range: Range<usize>,
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
    /// A JSON document followed by text that is not another document.
    #[error(
        "{name}: text after the JSON document that ends on line {after}; give the document \
         alone (was the command's stderr written into the file?)"
    )]
    Trailing {
        /// The file and the line the text starts on.
        name: String,
        /// The last line of the document before it.
        after: usize,
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
    /// Reads the documents in `text`: one JSON document, several one after the other (one per
    /// line, as `watch --json` writes them; each named `FILE:LINE` by the line it starts on),
    /// or the documents embedded in a report (each keeps the name it had there; what they
    /// inflate to is taken from `budget`, which all the inputs of one report share). An error
    /// names the line where the text stops being JSON.
    pub fn parse_all(
        name: &str,
        text: String,
        budget: &mut Budget,
    ) -> Result<Vec<Source>, SourceError> {
        if text.trim_start().starts_with("<!DOCTYPE html>") {
            let (json, documents) =
                embed::unpack(&text, budget).map_err(|error| SourceError::Embedded {
                    name: name.to_string(),
                    error,
                })?;
            let json = Arc::new(json);
            return documents
                .into_iter()
                .map(|(name, range)| Source::from_raw(name, Shared::new(&json, range)))
                .collect();
        }
        let mut values = serde_json::Deserializer::from_str(&text).into_iter::<&RawValue>();
        // Each value with the line it starts on and where it lies.
        let mut found: Vec<(usize, Range<usize>)> = Vec::new();
        loop {
            let offset = values.byte_offset();
            let rest = &text[offset..];
            let start = offset + (rest.len() - rest.trim_start().len());
            let line = text[..start].matches('\n').count() + 1;
            match values.next() {
                None => break,
                Some(Ok(raw)) => found.push((line, embed::within(&text, raw.get()))),
                // Text after a document that is not another one: stderr in the file, say.
                Some(Err(_)) if !found.is_empty() && !text[start..].starts_with('{') => {
                    return Err(SourceError::Trailing {
                        name: format!("{name}:{line}"),
                        after: line - 1,
                    });
                }
                Some(Err(error)) => {
                    return Err(SourceError::Json {
                        name: format!("{name}:{line}"),
                        error,
                    });
                }
            }
        }
        if found.is_empty() {
            let error = serde_json::from_str::<&RawValue>(&text).expect_err("no JSON value");
            return Err(SourceError::Json {
                name: name.to_string(),
                error,
            });
        }
        let one = found.len() == 1;
        let text = Arc::new(text);
        found
            .into_iter()
            .map(|(line, range)| {
                let name = if one {
                    name.to_string()
                } else {
                    format!("{name}:{line}")
                };
                Source::from_raw(name, Shared::new(&text, range))
            })
            .collect()
    }

    /// The whole document, as read (its JSON text, untouched).
    pub fn raw(&self) -> &str {
        &self.raw.text[self.raw.range.clone()]
    }

    /// The source `raw` named `name`. The name and the header's host are what the page shows
    /// (in its title, tables and legends, about ten times), so they are cut to
    /// [`NAME_SHOWN`] and [`HOST_SHOWN`] characters; the document itself is kept whole.
    fn from_raw(name: String, raw: Shared) -> Result<Source, SourceError> {
        let name = text::shorten(&name, NAME_SHOWN).into_owned();
        let mut header =
            serde_json::from_str::<Header>(&raw.text[raw.range.clone()]).map_err(|error| {
                SourceError::Envelope {
                    name: name.clone(),
                    error,
                }
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
        let mut json = serde_json::Deserializer::from_str(self.raw());
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

impl Shared {
    /// The part `range` of `text`.
    fn new(text: &Arc<String>, range: Range<usize>) -> Shared {
        Shared {
            text: Arc::clone(text),
            range,
        }
    }
}

//! `lowlat report`: one self-contained HTML file from lowlat's JSON documents. Nothing in it
//! refers to anything outside it (no URL of any kind; a Content-Security-Policy forbids every
//! fetch), it reads without JavaScript (charts are inline SVG, each with its table), every
//! string from a machine is escaped (the templates escape by default), and the same documents
//! give the same bytes (fixed section order, documents in the order given, one timestamp: the
//! newest document's). The documents are embedded, compressed, so a report is also an input.

mod embed;
pub(crate) mod inputs;
mod page;
mod sections;
mod source;
mod svg;

pub use embed::{Budget, DOCUMENTS_ID, EmbedError};
pub use source::{Source, SourceError};

use crate::compare::run::Run;

/// The report of `sources`, in the order given, and of peer tools' `runs` (drawn, not
/// embedded). The templates escape markup, not the characters that hide text (a host name's `ESC ]0;`,
/// a bidi override): those are written as escapes over the whole page, whose own markup holds
/// none but newlines and tabs (the embedded documents are compressed and encoded).
pub fn render(sources: &[Source], runs: &[Run]) -> Result<String, SourceError> {
    let sections = sections::all(sources, runs)?;
    Ok(crate::text::escape_page(&page::page(sources, &sections)).into_owned())
}

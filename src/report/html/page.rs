//! The page around the sections: the Content-Security-Policy that forbids every fetch, the
//! inline style, the header with the report's one timestamp, the contents, and the raw
//! documents embedded (compressed) so the report can be rendered again from the file alone.

use maud::{DOCTYPE, PreEscaped, html};

use super::embed::{self, DOCUMENTS_ID};
use super::sections::Section;
use super::source::Source;
use crate::document::UNKNOWN_HOST;

/// Nothing may be fetched, run or framed; only the inline style applies.
const CSP: &str =
    "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'";

const STYLE: &str = "
body { font: 14px/1.45 system-ui, sans-serif; color: #222; margin: 0 auto; max-width: 1100px; padding: 0 16px 48px; }
header { border-bottom: 2px solid #0072b2; margin-bottom: 12px; }
h1 { font-size: 22px; margin: 16px 0 4px; }
h2 { font-size: 18px; border-bottom: 1px solid #ccc; margin-top: 32px; }
h3 { font-size: 15px; margin: 18px 0 6px; }
table { border-collapse: collapse; margin: 6px 0 12px; font-size: 13px; }
th, td { border: 1px solid #ddd; padding: 2px 6px; text-align: left; vertical-align: top; }
thead th { background: #f0f0f0; }
table.facts th { background: #f7f7f7; width: 11em; }
table.matrix td { text-align: right; }
caption { text-align: left; font-weight: 600; padding: 2px 0; }
figure { margin: 12px 0 20px; }
figcaption { font-size: 13px; color: #444; }
svg.chart { width: 100%; height: auto; max-width: 1000px; display: block; font-size: 11px; }
svg .grid { stroke: #eee; }
details summary { cursor: pointer; color: #0072b2; font-size: 13px; }
pre.fix { margin: 0 0 2px; font-size: 12px; white-space: pre-wrap; overflow-wrap: anywhere; }
div.note { color: #555; font-size: 12px; }
div.tradeoff { color: #a60; font-size: 12px; margin-top: 2px; }
ul.warnings { color: #a60; margin: 2px 0 8px; }
p.from { color: #555; margin: 14px 0 4px; }
tr.status-fail td:first-child, tr.status-drift td:first-child { color: #b00; font-weight: 600; }
tr.status-warn td:first-child { color: #a60; font-weight: 600; }
tr.status-waived td:first-child { color: #85577a; font-weight: 600; }
nav ol { columns: 3; }
p.verdict { font-size: 18px; padding: 6px 10px; border-left: 6px solid; }
p.verdict-pass { border-color: #009e73; background: #eef8f3; }
p.verdict-fail { border-color: #b00; background: #fbeeee; }
p.verdict-not-proven { border-color: #a60; background: #fdf6e9; }
p.verdict strong { font-size: 22px; margin-right: 6px; }
";

/// The whole page.
pub(crate) fn page(sources: &[Source], sections: &[Section]) -> String {
    // Documents about no one machine (a comparison, a fleet) carry the host `unknown`.
    let mut hosts: Vec<&str> = sources
        .iter()
        .map(|s| s.header.host.as_str())
        .filter(|h| *h != UNKNOWN_HOST)
        .collect();
    hosts.sort_unstable();
    hosts.dedup();
    let title = if hosts.is_empty() {
        "lowlat report".to_string()
    } else {
        format!("lowlat report: {}", hosts.join(", "))
    };
    let markup = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta http-equiv="Content-Security-Policy" content=(CSP);
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) }
                style { (PreEscaped(STYLE)) }
            }
            body {
                header {
                    h1 { (title) }
                    p { (sources.len()) " documents, the latest written " time { (latest(sources)) }
                        " (UTC), by lowlat " (env!("CARGO_PKG_VERSION")) "." }
                }
                nav {
                    ol {
                        @for s in sections { li { a href=(format!("#{}", s.id)) { (s.title) } } }
                        li { a href="#documents" { "Documents" } }
                    }
                }
                @for s in sections {
                    section id=(s.id) { h2 { (s.title) } (s.body) }
                }
                section id="documents" {
                    h2 { "Documents" }
                    p { "Every document below is embedded whole in this file (the element with id "
                        code { (DOCUMENTS_ID) } ": JSON, zlib, base64), so the report can be rendered again: "
                        code { "lowlat report this.html -o new.html" } "." }
                    table {
                        thead { tr { th { "file" } th { "kind" } th { "schema" } th { "host" } th { "written by" } } }
                        tbody {
                            @for (s, count) in rows(sources) {
                                tr { td { code { (file_of(s, count)) } @if count > 1 { " (" (count) " documents, one a line)" } }
                                     td { (s.header.kind.to_string()) } td { (s.header.schema_version) }
                                     td { (s.header.host) } td { (s.header.tool.name) " " (s.header.tool.version) } }
                            }
                        }
                    }
                }
                (PreEscaped(embed::pack(sources.iter().map(|s| (s.name.as_str(), s.raw())))))
            }
        }
    };
    markup.into_string()
}

/// The rows of the Documents table: each document, except that consecutive documents of one
/// kind from the lines of one file (a day of `watch --json` is 86,400 of them) make one row,
/// with their number.
fn rows(sources: &[Source]) -> Vec<(&Source, usize)> {
    let mut rows: Vec<(&Source, usize)> = Vec::new();
    for s in sources {
        match rows.last_mut() {
            Some((first, count))
                if first.header.kind == s.header.kind
                    && first.name.rsplit_once(':').is_some()
                    && first.name.rsplit_once(':').map(|p| p.0)
                        == s.name.rsplit_once(':').map(|p| p.0) =>
            {
                *count += 1;
            }
            _ => rows.push((s, 1)),
        }
    }
    rows
}

/// The name a row shows: the document's, or for a run of lines the file's.
fn file_of(s: &Source, count: usize) -> &str {
    match s.name.rsplit_once(':') {
        Some((file, _)) if count > 1 => file,
        _ => &s.name,
    }
}

/// The newest `created` of the documents: the report's one timestamp.
fn latest(sources: &[Source]) -> String {
    sources
        .iter()
        .filter_map(|s| s.header.created.parse::<jiff::Timestamp>().ok())
        .max()
        .map_or_else(|| "unknown".to_string(), |t| t.to_string())
}

//! The documents inside a report: one JSON array of `{"name", "document"}`, compressed as a
//! zlib stream (deflate, RFC 1950) and written in base64 in a
//! `<script type="application/octet-stream">` element (a 512-CPU c2c document is 24 MB of
//! JSON; compressed, the report stays a few MB). Browsers neither run nor show it;
//! `lowlat report` reads it back, so a report can be rendered again from the file alone
//! (`lowlat report old.html -o new.html`), and so can any tool: `base64 -d` of the element's
//! text, then zlib's inflate (Python's `zlib.decompress`, `openssl zlib -d`), gives the JSON.
//!
//! Why zlib at level 6: on the 512-CPU bench documents (bench/report.sh, 23.9 MB of JSON) it
//! makes 2.2 MB where ruzstd's only level (its "fastest", used before) made 4.1 MB; level 9
//! saves another 12 % at several times the time, which the 2 s target of the report does not
//! allow.

use std::io::Write;
use std::ops::Range;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::value::RawValue;

/// The id of the element that holds the documents.
pub const DOCUMENTS_ID: &str = "lowlat-documents";

/// The zlib level: 6, its default (see the module's comment).
const LEVEL: u8 = 6;

/// The most bytes the documents embedded in all the reports one `lowlat report` reads may
/// inflate to, together: ten times the 512-CPU bench's 24 MB, so that crafted streams (1.4 MB
/// inflating to 2.1 GB; three 350 KB reports inflating to 3 GB with a limit per file) are
/// refused before they fill memory.
const INFLATED_LIMIT: usize = 256 << 20;

/// What the reports read so far have left of the bytes all of them may inflate to.
#[derive(Debug)]
pub struct Budget {
    /// Bytes left.
    left: usize,
}

impl Default for Budget {
    /// The whole budget: 256 MiB.
    fn default() -> Self {
        Budget {
            left: INFLATED_LIMIT,
        }
    }
}

/// What opens the element, up to its text.
fn opening() -> String {
    format!(
        "<script type=\"application/octet-stream\" id=\"{DOCUMENTS_ID}\" data-encoding=\"zlib+base64\">"
    )
}

/// The documents, `(name, JSON text)` in order, as the element's whole markup; each text goes
/// in as it was read, less the whitespace between tokens (keys keep their order, numbers their
/// digits), streamed into the compressor (no copy of the documents is made). Base64 has no
/// `<`, so nothing in it can close the element.
pub(crate) fn pack<'a>(documents: impl Iterator<Item = (&'a str, &'a str)>) -> String {
    let mut zlib =
        flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(u32::from(LEVEL)));
    let written: std::io::Result<()> = (|| {
        zlib.write_all(b"[")?;
        for (i, (name, raw)) in documents.enumerate() {
            let name = serde_json::Value::from(name);
            let comma = if i > 0 { "," } else { "" };
            write!(zlib, "{comma}{{\"name\":{name},\"document\":")?;
            minify_into(raw, &mut zlib)?;
            zlib.write_all(b"}")?;
        }
        zlib.write_all(b"]")
    })();
    // Writing into a Vec fails only when memory does, which aborts first.
    let compressed = written
        .and_then(|()| zlib.finish())
        .expect("compressing into memory");
    format!("{}{}</script>", opening(), STANDARD.encode(compressed))
}

/// Writes `json` (valid JSON) without whitespace outside its strings, a run of kept bytes at a
/// time (whitespace, quotes and backslashes are ASCII, so a run ends on a character boundary).
fn minify_into(json: &str, out: &mut impl Write) -> std::io::Result<()> {
    let bytes = json.as_bytes();
    let (mut in_string, mut escaped) = (false, false);
    let mut kept = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
        } else if b.is_ascii_whitespace() {
            out.write_all(&bytes[kept..i])?;
            kept = i + 1;
        } else {
            in_string = b == b'"';
        }
    }
    out.write_all(&bytes[kept..])
}

/// Why the documents of a report cannot be read back.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// No element, or one not closed.
    #[error(
        "no embedded documents (no closed element with id {DOCUMENTS_ID}); give a report written by lowlat report"
    )]
    Missing,
    /// The stream inflates past what the reports read before it left of the 256 MiB they may
    /// inflate to together (all of it for the first).
    #[error(
        "its embedded documents inflate past {} MiB, what the reports given before it left of \
         the {} MiB all the reports of one `lowlat report` may inflate to; more than reports \
         lowlat writes hold: give fewer reports at once, or this file was not written by lowlat \
         report",
        left >> 20,
        INFLATED_LIMIT >> 20
    )]
    TooLarge {
        /// Bytes that were left, MiB in the message.
        left: usize,
    },
    /// Not base64, not zlib, or not the JSON array.
    #[error("its embedded documents are damaged ({0}); render the report again from the documents")]
    Damaged(String),
}

/// A document's name and where its text lies in the inflated JSON.
pub(crate) type Placed = (String, Range<usize>);

/// The documents packed into `html` by [`pack`]: the inflated JSON, and each document's name
/// and where its text lies in it (the documents are not copied out of it). What it inflates to
/// is taken from `budget`.
pub(crate) fn unpack(html: &str, budget: &mut Budget) -> Result<(String, Vec<Placed>), EmbedError> {
    let open = opening();
    let start = html.find(&open).ok_or(EmbedError::Missing)? + open.len();
    let end = start + html[start..].find("</script>").ok_or(EmbedError::Missing)?;
    let damaged = |e: &dyn std::fmt::Display| EmbedError::Damaged(e.to_string());
    let compressed = STANDARD
        .decode(&html[start..end])
        .map_err(|e| damaged(&e))?;
    let mut json =
        miniz_oxide::inflate::decompress_to_vec_zlib_with_limit(&compressed, budget.left).map_err(
            |e| match e.status {
                miniz_oxide::inflate::TINFLStatus::HasMoreOutput => {
                    EmbedError::TooLarge { left: budget.left }
                }
                _ => damaged(&e),
            },
        )?;
    // The inflated vector grows by doubling: what it holds is what it costs.
    json.shrink_to_fit();
    budget.left -= json.capacity().min(budget.left);
    let json = String::from_utf8(json).map_err(|e| damaged(&e))?;
    #[derive(serde::Deserialize)]
    struct Entry<'a> {
        name: String,
        #[serde(borrow)]
        document: &'a RawValue,
    }
    let entries: Vec<Entry> = serde_json::from_str(&json).map_err(|e| damaged(&e))?;
    let entries = entries
        .into_iter()
        .map(|e| (e.name, within(&json, e.document.get())))
        .collect();
    Ok((json, entries))
}

/// Where `part`, a slice of `whole`, lies in it.
pub(crate) fn within(whole: &str, part: &str) -> Range<usize> {
    let start = part.as_ptr() as usize - whole.as_ptr() as usize;
    start..start + part.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_come_back_as_packed() {
        let doc = r#"{ "kind": "inventory", "host": "</script><b>" }"#;
        let html = format!("<p>x</p>{}<p>y</p>", pack([("a\"b.json", doc)].into_iter()));
        assert_eq!(html.matches("</script>").count(), 1);
        let (json, entries) = unpack(&html, &mut Budget::default()).unwrap();
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].0, "a\"b.json");
        assert_eq!(
            &json[entries[0].1.clone()],
            r#"{"kind":"inventory","host":"</script><b>"}"#
        );
    }

    #[test]
    fn minifying_keeps_strings_and_order() {
        let json = "{ \"b\" : [1, 2.50],\n  \"a\": \"x \\\" y\\\\\" , \"c\": \" é\" }";
        let mut out = Vec::new();
        minify_into(json, &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"b":[1,2.50],"a":"x \" y\\","c":" é"}"#
        );
    }

    #[test]
    fn damage_is_named() {
        let html = format!("{}not base64!</script>", opening());
        let budget = &mut Budget::default();
        assert!(matches!(unpack(&html, budget), Err(EmbedError::Damaged(_))));
        assert!(matches!(
            unpack("<html></html>", budget),
            Err(EmbedError::Missing)
        ));
    }

    /// R2-6: the limit was per file. One budget for every report read: what one inflates to
    /// is taken from it, and the report that crosses it is refused.
    #[test]
    fn the_reports_share_one_budget() {
        let document = format!("{{\"pad\":\"{}\"}}", "x".repeat(4000));
        let html = pack([("a.json", document.as_str())].into_iter());
        let mut budget = Budget { left: 10_000 };
        for _ in 0..2 {
            let (json, _) = unpack(&html, &mut budget).unwrap();
            assert!(json.len() > 4000);
        }
        assert!(budget.left < 2000, "{budget:?}");
        let left = budget.left;
        let error = unpack(&html, &mut budget).unwrap_err();
        assert!(
            matches!(error, EmbedError::TooLarge { left: l } if l == left),
            "{error}"
        );
    }

    /// R-4: a 1.4 MB report inflated to 2.1 GB. Past the limit it is refused.
    #[test]
    fn a_stream_that_inflates_past_the_limit_is_refused() {
        let bomb = vec![b' '; INFLATED_LIMIT + 1];
        let compressed = miniz_oxide::deflate::compress_to_vec_zlib(&bomb, 9);
        assert!(compressed.len() < 1 << 20, "{}", compressed.len());
        let html = format!("{}{}</script>", opening(), STANDARD.encode(compressed));
        assert!(matches!(
            unpack(&html, &mut Budget::default()),
            Err(EmbedError::TooLarge { .. })
        ));
    }
}

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

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::value::RawValue;

/// The id of the element that holds the documents.
pub const DOCUMENTS_ID: &str = "lowlat-documents";

/// The zlib level: 6, its default (see the module's comment).
const LEVEL: u8 = 6;

/// The most bytes the embedded documents may inflate to: ten times the 512-CPU bench's 24 MB,
/// so that a crafted stream (1.4 MB inflating to 2.1 GB) is refused before it fills memory.
const INFLATED_LIMIT: usize = 256 << 20;

/// What opens the element, up to its text.
fn opening() -> String {
    format!(
        "<script type=\"application/octet-stream\" id=\"{DOCUMENTS_ID}\" data-encoding=\"zlib+base64\">"
    )
}

/// The documents, `(name, JSON text)` in order, as the element's whole markup; each text goes
/// in as it was read, less the whitespace between tokens (keys keep their order, numbers their
/// digits). Base64 has no `<`, so nothing in it can close the element.
pub(crate) fn pack<'a>(documents: impl Iterator<Item = (&'a str, &'a str)>) -> String {
    let entries: Vec<String> = documents
        .map(|(name, raw)| {
            let name = serde_json::Value::from(name);
            format!("{{\"name\":{name},\"document\":{}}}", minify(raw))
        })
        .collect();
    let json = format!("[{}]", entries.join(","));
    let compressed = miniz_oxide::deflate::compress_to_vec_zlib(json.as_bytes(), LEVEL);
    format!("{}{}</script>", opening(), STANDARD.encode(compressed))
}

/// `json` (valid JSON) without whitespace outside its strings.
fn minify(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    let (mut in_string, mut escaped) = (false, false);
    for c in json.chars() {
        if in_string {
            out.push(c);
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
        } else if !c.is_ascii_whitespace() {
            in_string = c == '"';
            out.push(c);
        }
    }
    out
}

/// Why the documents of a report cannot be read back.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// No element, or one not closed.
    #[error(
        "no embedded documents (no closed element with id {DOCUMENTS_ID}); give a report written by lowlat report"
    )]
    Missing,
    /// The stream inflates past 256 MiB, more than any report lowlat writes holds.
    #[error(
        "its embedded documents inflate past {} MiB, more than any report lowlat writes holds; this file was not written by lowlat report",
        INFLATED_LIMIT >> 20
    )]
    TooLarge,
    /// Not base64, not zlib, or not the JSON array.
    #[error("its embedded documents are damaged ({0}); render the report again from the documents")]
    Damaged(String),
}

/// The `(name, JSON text)` pairs packed into `html` by [`pack`].
pub(crate) fn unpack(html: &str) -> Result<Vec<(String, String)>, EmbedError> {
    let open = opening();
    let start = html.find(&open).ok_or(EmbedError::Missing)? + open.len();
    let end = start + html[start..].find("</script>").ok_or(EmbedError::Missing)?;
    let damaged = |e: &dyn std::fmt::Display| EmbedError::Damaged(e.to_string());
    let compressed = STANDARD
        .decode(&html[start..end])
        .map_err(|e| damaged(&e))?;
    let json = miniz_oxide::inflate::decompress_to_vec_zlib_with_limit(&compressed, INFLATED_LIMIT)
        .map_err(|e| match e.status {
            miniz_oxide::inflate::TINFLStatus::HasMoreOutput => EmbedError::TooLarge,
            _ => damaged(&e),
        })?;
    #[derive(serde::Deserialize)]
    struct Entry<'a> {
        name: String,
        #[serde(borrow)]
        document: &'a RawValue,
    }
    let entries: Vec<Entry> = serde_json::from_slice(&json).map_err(|e| damaged(&e))?;
    Ok(entries
        .into_iter()
        .map(|e| (e.name, e.document.get().to_string()))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_come_back_as_packed() {
        let doc = r#"{ "kind": "inventory", "host": "</script><b>" }"#;
        let html = format!("<p>x</p>{}<p>y</p>", pack([("a\"b.json", doc)].into_iter()));
        assert_eq!(html.matches("</script>").count(), 1);
        assert_eq!(
            unpack(&html).unwrap(),
            vec![(
                "a\"b.json".to_string(),
                r#"{"kind":"inventory","host":"</script><b>"}"#.to_string()
            )]
        );
    }

    #[test]
    fn minifying_keeps_strings_and_order() {
        let json = "{ \"b\" : [1, 2.50],\n  \"a\": \"x \\\" y\\\\\" , \"c\": \" \" }";
        assert_eq!(minify(json), r#"{"b":[1,2.50],"a":"x \" y\\","c":" "}"#);
    }

    #[test]
    fn damage_is_named() {
        let html = format!("{}not base64!</script>", opening());
        assert!(matches!(unpack(&html), Err(EmbedError::Damaged(_))));
        assert!(matches!(unpack("<html></html>"), Err(EmbedError::Missing)));
    }

    /// R-4: a 1.4 MB report inflated to 2.1 GB. Past the limit it is refused.
    #[test]
    fn a_stream_that_inflates_past_the_limit_is_refused() {
        let bomb = vec![b' '; INFLATED_LIMIT + 1];
        let compressed = miniz_oxide::deflate::compress_to_vec_zlib(&bomb, 9);
        assert!(compressed.len() < 1 << 20, "{}", compressed.len());
        let html = format!("{}{}</script>", opening(), STANDARD.encode(compressed));
        assert!(matches!(unpack(&html), Err(EmbedError::TooLarge)));
    }
}

//! A sosreport archive as sos writes it (`sosreport-HOST-DATE-ID.tar.xz`, or `.tar.gz` with
//! `-z gzip`): one top directory `sosreport-*/` holding the report. Unpacked entry by entry
//! into the private directory that becomes the machine tree, through [`super::tree`]'s
//! writers (never through a link, never over a file); what sos keeps of its own (`sos_logs/`,
//! `sos_reports/`) is left out, `sos_commands/` kept for the reader of the command outputs.
//! A file over [`MAX_FILE_BYTES`], more than [`MAX_TOTAL_BYTES`] in all or [`MAX_ENTRIES`]
//! entries end or skip the unpacking with a note; an archive cut short keeps what came before
//! the cut, and says so.

use std::io::{self, Read};
use std::path::{Path, PathBuf};

use super::tree::{self, SOS_OWN};
use crate::snapshot::{MAX_ENTRIES, MAX_TOTAL_BYTES};
use crate::sysroot::MAX_FILE_BYTES;

/// The compression of an archive, from its first bytes.
fn decoder<'a>(file: &Path, magic: &[u8], raw: impl Read + 'a) -> io::Result<Box<dyn Read + 'a>> {
    if magic.starts_with(&[0x1f, 0x8b]) {
        Ok(Box::new(flate2::read::GzDecoder::new(raw)))
    } else if magic.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0]) {
        Ok(Box::new(liblzma::read::XzDecoder::new(raw)))
    } else {
        Err(io::Error::other(format!(
            "{}: neither xz nor gzip (give the sosreport-*.tar.xz or .tar.gz sos wrote, or its unpacked directory)",
            crate::text::escape_controls(&file.display().to_string())
        )))
    }
}

/// What unpacking gave.
pub(super) struct Unpacked {
    /// The report's directory (`DIR/sosreport-*`).
    pub(super) report: PathBuf,
    /// What was left out or cut, one line each.
    pub(super) notes: Vec<String>,
}

/// Unpacks the archive `file` into `into`. Fails when the archive cannot be read at all or is
/// not one report; an archive damaged or cut short after its first entries keeps those, with
/// a note.
pub(super) fn unpack(file: &Path, into: &Path) -> io::Result<Unpacked> {
    let mut raw = std::fs::File::open(file)?;
    let mut magic = [0u8; 6];
    let read = raw.read(&mut magic)?;
    let chained = io::Cursor::new(magic[..read].to_vec()).chain(raw);
    let stream = decoder(file, &magic[..read], chained)?.take(MAX_TOTAL_BYTES + 1);
    let mut archive = tar::Archive::new(stream);
    let mut top: Option<String> = None;
    let mut notes = Vec::new();
    let mut total = 0u64;
    let entries = archive.entries()?;
    for (count, entry) in entries.enumerate() {
        if count >= MAX_ENTRIES {
            notes.push(format!(
                "the archive holds more than {MAX_ENTRIES} entries; the rest left out"
            ));
            break;
        }
        let mut entry = match entry {
            Ok(entry) => entry,
            Err(e) => {
                notes.push(cut_note(&e));
                break;
            }
        };
        let name = entry.path_bytes().into_owned();
        let name = String::from_utf8_lossy(&name).into_owned();
        let Some(rel) = tree::relative(&name) else {
            notes.push(format!(
                "{}: an entry with '..' or an absolute path; left out",
                crate::text::escape_controls(&name)
            ));
            continue;
        };
        let mut parts = rel.iter();
        let first = parts.next().and_then(|p| p.to_str()).unwrap_or_default();
        match &top {
            None => top = Some(first.to_string()),
            Some(t) if t != first => {
                return Err(io::Error::other(format!(
                    "{}: holds more than one top directory ({} and {}); not one sosreport",
                    file.display(),
                    crate::text::escape_controls(t),
                    crate::text::escape_controls(first)
                )));
            }
            Some(_) => {}
        }
        let inner: PathBuf = parts.collect();
        let kind = entry.header().entry_type();
        let is_link = kind.is_symlink();
        let own = inner
            .iter()
            .next()
            .and_then(|p| p.to_str())
            .is_some_and(|p| SOS_OWN.contains(&p));
        let keep = inner.starts_with("sos_commands") || (!own && tree::belongs(&inner, is_link));
        if inner.as_os_str().is_empty() || !keep {
            continue;
        }
        let at = Path::new(first).join(&inner);
        if kind.is_dir() {
            tree::create_dir(into, &at)?;
        } else if is_link {
            if let Ok(Some(target)) = entry.link_name() {
                tree::create_link(into, &at, &target)?;
            }
        } else if kind.is_file() {
            let size = entry.header().size().unwrap_or(u64::MAX);
            if size > MAX_FILE_BYTES || total.saturating_add(size) > MAX_TOTAL_BYTES {
                notes.push(format!(
                    "{}: {size} bytes, more than lowlat reads of a file ({MAX_FILE_BYTES}) or of a bundle ({MAX_TOTAL_BYTES}); left out",
                    crate::text::escape_controls(&inner.display().to_string())
                ));
                continue;
            }
            let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
            if let Err(e) = entry.read_to_end(&mut bytes) {
                notes.push(cut_note(&e));
                break;
            }
            total += bytes.len() as u64;
            tree::create_file(into, &at, &bytes)?;
        }
    }
    let top =
        top.ok_or_else(|| io::Error::other(format!("{}: an empty archive", file.display())))?;
    Ok(Unpacked {
        report: into.join(top),
        notes,
    })
}

fn cut_note(e: &io::Error) -> String {
    format!(
        "the archive ends early or is damaged ({}): what came before is read, the rest is missing",
        crate::text::escape_controls(&e.to_string())
    )
}

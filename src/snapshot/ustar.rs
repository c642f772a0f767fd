//! The entries of a tar archive held in memory whole, read straight from its 512-byte headers:
//! no copy of a header or a name, no allocation per entry (what [`super::load`] spends its
//! time on for a snapshot of thousands of files, see bench/RESULTS.md "fleet").
//!
//! It reads what tar writers put in a snapshot: POSIX ustar and GNU headers, a name longer than
//! the header's field in a GNU long-name entry (`L`, which lowlat's own writer and Python's
//! `tarfile` emit) or in a pax extended header (`x`: its `path` and `size` records). Other entry
//! types (links, devices, sparse files, pax global headers) are handed on for the caller to
//! refuse. Every header's checksum is checked and every size against the end of the archive.

use std::borrow::Cow;
use std::io;
use std::ops::Range;

/// The size of a header and the unit an entry's bytes are padded to.
const BLOCK: usize = 512;

/// One entry of an archive.
#[derive(Debug, PartialEq)]
pub(super) struct Member<'a> {
    /// Its name, from a long-name entry or pax `path` before it, else from its header (invalid
    /// UTF-8 replaced).
    pub(super) name: Cow<'a, str>,
    /// Its type (the header's type flag).
    pub(super) kind: tar::EntryType,
    /// Where its bytes are in the archive.
    pub(super) data: Range<usize>,
}

/// The entries of `archive` in order, up to the first block of zeros or the end of the
/// archive; an error (a damaged header, an entry cut short) ends them.
pub(super) fn members(archive: &[u8]) -> Members<'_> {
    Members {
        archive,
        next: 0,
        failed: false,
    }
}

/// The iterator of [`members`].
#[derive(Debug)]
pub(super) struct Members<'a> {
    archive: &'a [u8],
    /// Where the next header starts.
    next: usize,
    /// Whether an error ended the walk.
    failed: bool,
}

/// What the extension entries before an entry say about it.
#[derive(Default)]
struct Extensions<'a> {
    /// Its name (GNU long name, or pax `path`).
    name: Option<&'a [u8]>,
    /// Its size in bytes (pax `size`).
    size: Option<u64>,
}

impl<'a> Iterator for Members<'a> {
    type Item = io::Result<Member<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let next = self.member().transpose();
        self.failed = matches!(next, Some(Err(_)));
        next
    }
}

impl<'a> Members<'a> {
    /// The next entry, after the extension entries that describe it.
    fn member(&mut self) -> io::Result<Option<Member<'a>>> {
        let mut extensions = Extensions::default();
        let mut extended = false;
        loop {
            let Some((header, data)) = self.block(extensions.size)? else {
                return if extended {
                    Err(corrupt("an extension entry describes no entry after it"))
                } else {
                    Ok(None)
                };
            };
            let kind = tar::EntryType::new(header[156]);
            let bytes = &self.archive[data.clone()];
            match header[156] {
                b'L' if extensions.name.is_none() => extensions.name = Some(until_nul(bytes)),
                // A long link name: the entry it describes is a link, refused by the caller.
                b'K' => {}
                b'x' => pax(bytes, &mut extensions)?,
                b'L' => return Err(corrupt("two long names for one entry")),
                _ => {
                    let name = match extensions.name {
                        Some(name) => text(name),
                        None => header_name(header),
                    };
                    return Ok(Some(Member { name, kind, data }));
                }
            }
            extended = true;
        }
    }

    /// The next header and the range of the bytes that follow it (`size` of them when a pax
    /// header said so and this is the entry it describes, else as many as the header says),
    /// or `None` at the end of the archive; moves on to the header after them.
    fn block(&mut self, size: Option<u64>) -> io::Result<Option<(&'a [u8; BLOCK], Range<usize>)>> {
        let archive = self.archive;
        let Some(header) = archive
            .get(self.next..)
            .and_then(|rest| rest.first_chunk::<BLOCK>())
        else {
            return if self.next >= archive.len() {
                Ok(None)
            } else {
                Err(corrupt("the archive ends inside a header"))
            };
        };
        if header.iter().all(|&b| b == 0) {
            return Ok(None);
        }
        check_sum(header)?;
        let extension = matches!(header[156], b'L' | b'K' | b'x' | b'g');
        let size = match size.filter(|_| !extension) {
            Some(size) => size,
            None => number(&header[124..136])
                .ok_or_else(|| corrupt("a header's size is not a number"))?,
        };
        let start = self.next + BLOCK;
        let end = usize::try_from(size)
            .ok()
            .and_then(|size| start.checked_add(size))
            .filter(|&end| end <= archive.len())
            .ok_or_else(|| corrupt("the archive ends inside an entry"))?;
        self.next = end.next_multiple_of(BLOCK);
        Ok(Some((header, start..end)))
    }
}

/// Checks the header's checksum: the sum of its bytes, the checksum field counted as spaces.
fn check_sum(header: &[u8; BLOCK]) -> io::Result<()> {
    // Two plain sums (not one over a chain of both), which the compiler vectorizes: the sum
    // was a tenth of loading a snapshot.
    let sum = |bytes: &[u8]| bytes.iter().map(|&b| u32::from(b)).sum::<u32>();
    let total = sum(&header[..148]) + sum(&header[156..]) + 8 * u32::from(b' ');
    if number(&header[148..156]) == Some(u64::from(total)) {
        Ok(())
    } else {
        Err(corrupt("archive header checksum mismatch"))
    }
}

/// The name in a header: the `name` field, after the `prefix` field and a `/` when it is a
/// POSIX ustar header with a prefix.
fn header_name(header: &[u8; BLOCK]) -> Cow<'_, str> {
    let name = until_nul(&header[..100]);
    let prefix = until_nul(&header[345..500]);
    if &header[257..263] != b"ustar\0" || prefix.is_empty() {
        return text(name);
    }
    let mut joined = prefix.to_vec();
    joined.push(b'/');
    joined.extend_from_slice(name);
    Cow::Owned(String::from_utf8_lossy(&joined).into_owned())
}

/// Reads the records of a pax extended header (`LEN KEY=VALUE\n`) into `extensions`: `path`
/// and `size`; others are passed over.
fn pax<'a>(mut records: &'a [u8], extensions: &mut Extensions<'a>) -> io::Result<()> {
    let bad = || corrupt("a pax extended header record is malformed");
    while !records.is_empty() && records[0] != 0 {
        let space = records.iter().position(|&b| b == b' ').ok_or_else(bad)?;
        let length: usize = std::str::from_utf8(&records[..space])
            .ok()
            .and_then(|n| n.parse().ok())
            .filter(|&n| n > space + 1 && n <= records.len())
            .ok_or_else(bad)?;
        let record = records[space + 1..length]
            .strip_suffix(b"\n")
            .ok_or_else(bad)?;
        let equals = record.iter().position(|&b| b == b'=').ok_or_else(bad)?;
        let (key, value) = (&record[..equals], &record[equals + 1..]);
        match key {
            b"path" => extensions.name = Some(value),
            b"size" => {
                let size = std::str::from_utf8(value).ok().and_then(|v| v.parse().ok());
                extensions.size = Some(size.ok_or_else(bad)?);
            }
            _ => {}
        }
        records = &records[length..];
    }
    Ok(())
}

/// A numeric header field: octal digits (between optional spaces, ended by a NUL or a space),
/// or GNU's base-256 (the first byte's high bit set, the rest big-endian).
fn number(field: &[u8]) -> Option<u64> {
    if field.first().is_some_and(|&b| b & 0x80 != 0) {
        let mut value: u64 = u64::from(field[0] & 0x7f);
        for &b in &field[1..] {
            value = value.checked_mul(256)? | u64::from(b);
        }
        return Some(value);
    }
    let digits = std::str::from_utf8(until_nul(field))
        .ok()?
        .trim_matches(' ');
    u64::from_str_radix(digits, 8).ok()
}

/// `bytes` as text, invalid UTF-8 replaced (the plain check first: it is faster on the valid
/// names of every snapshot).
fn text(bytes: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(text) => Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

/// `bytes` up to the first NUL.
fn until_nul(bytes: &[u8]) -> &[u8] {
    bytes
        .iter()
        .position(|&b| b == 0)
        .map_or(bytes, |end| &bytes[..end])
}

fn corrupt(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (name, type, bytes) of every entry, as `members` reads them.
    fn read(archive: &[u8]) -> io::Result<Vec<(String, tar::EntryType, Vec<u8>)>> {
        members(archive)
            .map(|m| m.map(|m| (m.name.into_owned(), m.kind, archive[m.data].to_vec())))
            .collect()
    }

    /// (name, type, bytes) of every entry, as the `tar` crate reads them.
    fn read_with_tar(archive: &[u8]) -> Vec<(String, tar::EntryType, Vec<u8>)> {
        let mut archive = tar::Archive::new(archive);
        archive
            .entries()
            .unwrap()
            .map(|entry| {
                let mut entry = entry.unwrap();
                let name = entry.path().unwrap().to_string_lossy().into_owned();
                let kind = entry.header().entry_type();
                let mut bytes = Vec::new();
                io::Read::read_to_end(&mut entry, &mut bytes).unwrap();
                (name, kind, bytes)
            })
            .collect()
    }

    fn file(
        builder: &mut tar::Builder<Vec<u8>>,
        mut header: tar::Header,
        name: &str,
        bytes: &[u8],
    ) {
        header.set_entry_type(tar::EntryType::Regular);
        header.set_mode(0o644);
        header.set_size(bytes.len() as u64);
        builder.append_data(&mut header, name, bytes).unwrap();
    }

    /// A pax extended header of one record, `key=value`.
    fn pax_header(builder: &mut tar::Builder<Vec<u8>>, key: &str, value: &str) {
        let body = format!(" {key}={value}\n");
        // The record's length counts its own digits.
        let mut length = body.len();
        while format!("{length}{body}").len() != length {
            length = format!("{length}{body}").len();
        }
        let record = format!("{length}{body}");
        let mut header = tar::Header::new_ustar();
        header.set_entry_type(tar::EntryType::XHeader);
        header.set_mode(0o644);
        header.set_size(record.len() as u64);
        builder
            .append_data(&mut header, "PaxHeaders/entry", record.as_bytes())
            .unwrap();
    }

    #[test]
    fn reads_what_the_tar_crate_reads_long_names_and_pax_headers_included() {
        let mut builder = sample_builder();
        let mut link = tar::Header::new_gnu();
        link.set_entry_type(tar::EntryType::Symlink);
        link.set_size(0);
        builder
            .append_link(&mut link, "root/link", "/etc/passwd")
            .unwrap();
        file(&mut builder, tar::Header::new_gnu(), "root/empty", b"");
        let archive = builder.into_inner().unwrap();

        let ours = read(&archive).unwrap();
        assert_eq!(ours, read_with_tar(&archive));
        let names: Vec<&str> = ours.iter().map(|(name, ..)| name.as_str()).collect();
        let expected = [&*GNU_LONG_NAME, &*USTAR_PREFIXED, &*PAX_PATH];
        assert_eq!(names[1..4], expected.map(String::as_str));
        assert_eq!(ours[5].1, tar::EntryType::Symlink);
    }

    #[test]
    fn damage_is_an_error_and_ends_the_walk() {
        let mut builder = tar::Builder::new(Vec::new());
        file(&mut builder, tar::Header::new_gnu(), "a", b"0123456789");
        file(&mut builder, tar::Header::new_gnu(), "b", b"x");
        let archive = builder.into_inner().unwrap();

        // Cut inside the first entry's bytes, inside the second header.
        let err = read(&archive[..BLOCK + 5]).unwrap_err();
        assert!(err.to_string().contains("ends inside an entry"), "{err}");
        let err = read(&archive[..2 * BLOCK + 100]).unwrap_err();
        assert!(err.to_string().contains("ends inside a header"), "{err}");
        // Cut at a header: the entries before it.
        assert_eq!(read(&archive[..2 * BLOCK]).unwrap().len(), 1);

        let mut flipped = archive.clone();
        flipped[3] ^= 1;
        let err = read(&flipped).unwrap_err();
        assert!(err.to_string().contains("checksum"), "{err}");
        assert_eq!(members(&flipped).count(), 1, "an error ends the walk");

        // A size past the end, with a checksum that matches.
        let mut huge = archive.clone();
        huge[124..136].copy_from_slice(b"77777777777\0");
        let sum: u32 = huge[..148]
            .iter()
            .chain(&huge[156..BLOCK])
            .map(|&b| u32::from(b))
            .sum::<u32>()
            + 256;
        huge[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
        let err = read(&huge).unwrap_err();
        assert!(err.to_string().contains("ends inside an entry"), "{err}");
    }

    /// A name longer than ustar's fields: GNU long-name entries carry it.
    static GNU_LONG_NAME: std::sync::LazyLock<String> =
        std::sync::LazyLock::new(|| format!("root/sys/{}/value", "d".repeat(300)));
    /// A name that fits ustar's prefix and name fields only together.
    static USTAR_PREFIXED: std::sync::LazyLock<String> =
        std::sync::LazyLock::new(|| format!("root/{}/x", "p".repeat(110)));
    /// A name given by a pax extended header, longer than the entry's own name field.
    static PAX_PATH: std::sync::LazyLock<String> =
        std::sync::LazyLock::new(|| format!("{}.pax", *GNU_LONG_NAME));

    /// A builder holding every kind of entry the walk reads: short and GNU long names, a
    /// ustar prefix, a pax path, a directory.
    fn sample_builder() -> tar::Builder<Vec<u8>> {
        let mut builder = tar::Builder::new(Vec::new());
        file(&mut builder, tar::Header::new_gnu(), "manifest.json", b"{}");
        file(
            &mut builder,
            tar::Header::new_gnu(),
            &GNU_LONG_NAME,
            b"gnu long name\n",
        );
        file(
            &mut builder,
            tar::Header::new_ustar(),
            &USTAR_PREFIXED,
            b"ustar prefix",
        );
        pax_header(&mut builder, "path", &PAX_PATH);
        file(&mut builder, tar::Header::new_ustar(), "short", b"pax path");
        let mut dir = tar::Header::new_gnu();
        dir.set_entry_type(tar::EntryType::Directory);
        dir.set_size(0);
        builder
            .append_data(&mut dir, "root/proc", io::empty())
            .unwrap();
        builder
    }

    proptest::proptest! {
        /// Damaged archives (bytes changed, cut anywhere) never panic the walk nor the tree
        /// built from it, and every entry's bytes lie inside the archive.
        #[test]
        fn a_damaged_archive_never_panics(
            changes in proptest::collection::vec(
                (
                    0usize..64,
                    proptest::prop_oneof![0usize..4, 0usize..BLOCK],
                    // Any byte, or one that means something in a header or a pax record.
                    proptest::prop_oneof![proptest::num::u8::ANY, b'0'..=b'9', proptest::sample::select(b"/ =\n\0x".to_vec())],
                ),
                0..8,
            ),
            cut in 0usize..8192,
            sums_fixed in proptest::bool::ANY,
        ) {
            let mut archive = sample_builder().into_inner().unwrap();
            // Changes in the blocks that hold something (headers, names, pax records), half of
            // them in the first bytes (a name's start, a pax record's length).
            let blocks: Vec<usize> = (0..archive.len() / BLOCK)
                .filter(|&b| archive[b * BLOCK..(b + 1) * BLOCK].iter().any(|&x| x != 0))
                .collect();
            for (block, offset, byte) in changes {
                archive[blocks[block % blocks.len()] * BLOCK + offset] = byte;
            }
            if sums_fixed {
                // Checksums that match the changed headers, so that the changes reach the
                // fields after the check.
                for block in archive.chunks_exact_mut(BLOCK).filter(|b| b.iter().any(|&x| x != 0)) {
                    block[148..156].fill(b' ');
                    let sum: u32 = block.iter().map(|&b| u32::from(b)).sum();
                    block[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
                }
            }
            archive.truncate(cut.max(1));
            let mut tree = crate::sysroot::MemoryTree::default();
            let mut names = Vec::new();
            for member in members(&archive).flatten() {
                proptest::prop_assert!(member.data.end <= archive.len());
                tree.add_file(&member.name, member.data);
                names.push(member.name.into_owned());
            }
            tree.hold(archive.clone());
            for name in names {
                let _ = (tree.file(&name), tree.names(&name), tree.is_dir(&name));
            }
        }
    }

    #[test]
    fn numbers_are_octal_or_base_256() {
        assert_eq!(number(b"00000000012\0"), Some(10));
        assert_eq!(number(b"     12 \0\0\0\0"), Some(10));
        assert_eq!(number(&[0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0]), Some(256));
        assert_eq!(number(b"12x\0"), None);
        assert_eq!(number(&[0xff; 12]), None);
    }
}

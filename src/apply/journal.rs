//! The apply journal: before lowlat changes anything it appends the prior state (a knob's
//! value, a file's content and mode or "did not exist", a task's affinity, a service's state,
//! a kernel entry's arguments) to `/var/lib/lowlat/journal.jsonl` under the SysRoot, and
//! fsyncs it. `lowlat revert` replays the records backwards.
//!
//! One record per line: `{"crc32":"<8 hex digits>","entry":{"seq":N,"record":{...}}}`, where
//! the checksum is the CRC-32 (IEEE) of the bytes of the `entry` object exactly as written and
//! `seq` is the line's 1-based number (so a line lost or repeated in the middle is seen). A
//! line is only
//! appended whole, with one `write()` followed by an fsync, and the change it describes is made
//! only after that; so the only damage a crash can do is a torn *last* line (no newline at the
//! end), whose change was never made: the reader drops it with a warning. Any other damage (a
//! checksum mismatch, a line that is not a record, a torn line followed by others, a journal
//! that does not start with a `begin` record) is an error naming the file and line, and revert
//! then changes nothing.

use serde::{Deserialize, Serialize};

use crate::document::{self, Header, Kind, Layout, LayoutError};
use crate::machine::CpuSet;
use crate::sysroot::{ReadError, SysRoot, WriteError};
use crate::text::Page;

/// Where the journal lives, under the SysRoot.
pub(crate) const JOURNAL_PATH: &str = "/var/lib/lowlat/journal.jsonl";

/// The directory of the journal and the lock.
pub(crate) const STATE_DIR: &str = "/var/lib/lowlat";

/// The bytes of a file or knob: as text when they are UTF-8, else as hex digits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Bytes {
    /// UTF-8 text, verbatim.
    Text(String),
    /// Anything else, two lower-case hex digits per byte.
    Hex(String),
}

impl Bytes {
    /// Stores `bytes`.
    pub(crate) fn of(bytes: &[u8]) -> Self {
        match std::str::from_utf8(bytes) {
            Ok(text) => Bytes::Text(text.to_string()),
            Err(_) => {
                let mut hex = Page::new();
                for b in bytes {
                    write!(hex, "{b:02x}");
                }
                Bytes::Hex(hex.into_string())
            }
        }
    }

    /// The stored bytes; `None` when hex digits are garbled.
    pub(crate) fn to_vec(&self) -> Option<Vec<u8>> {
        match self {
            Bytes::Text(text) => Some(text.as_bytes().to_vec()),
            Bytes::Hex(hex) => {
                let digits = hex.as_bytes();
                if digits.len() % 2 != 0 {
                    return None;
                }
                digits
                    .chunks(2)
                    .map(|pair| {
                        let text = std::str::from_utf8(pair).ok()?;
                        u8::from_str_radix(text, 16).ok()
                    })
                    .collect()
            }
        }
    }
}

/// A file as it was before lowlat replaced it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct PriorFile {
    /// The whole content.
    pub content: Bytes,
    /// Permission bits (`0o644` is stored as 420).
    pub mode: u32,
    /// Owner user id.
    pub uid: u32,
    /// Owner group id.
    pub gid: u32,
}

/// A thread about to move to another cpuset (or whose affinity a partition is about to
/// change), as it was.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct PlacedThread {
    /// Thread id.
    pub tid: u32,
    /// Its command name, to recognise it again.
    pub comm: String,
    /// The cpuset it was in (its path in the hierarchy, `/`).
    pub cpuset: String,
    /// The CPUs it was allowed on.
    pub affinity: CpuSet,
}

/// The identity of an apply in its `begin` record: the journal's document envelope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub(crate) enum BeginStamp {
    /// Schema 2 on: the envelope every lowlat document carries, under `header`.
    Envelope {
        /// The envelope, of kind `journal`.
        header: Header,
    },
    /// Schema 1, as the first journals wrote it (read back so that revert still works).
    BeforeEnvelope {
        /// Layout version of the records (1).
        journal_version: u32,
        /// The lowlat version that applied.
        lowlat_version: String,
        /// When, as an RFC 3339 UTC timestamp.
        time: String,
        /// The host name.
        host: String,
    },
}

impl BeginStamp {
    /// The stamp of an apply starting now on `host`.
    pub(crate) fn now(host: impl Into<String>) -> Self {
        BeginStamp::Envelope {
            header: Header::new(Kind::Journal, host),
        }
    }

    /// When the apply started, RFC 3339 UTC.
    pub(crate) fn created(&self) -> &str {
        match self {
            BeginStamp::Envelope { header } => &header.created,
            BeginStamp::BeforeEnvelope { time, .. } => time,
        }
    }

    /// Whether this lowlat reads the records that follow.
    pub(crate) fn layout(&self) -> Result<Layout, LayoutError> {
        match self {
            BeginStamp::Envelope { header } => document::layout_of(
                Some(header.schema_version),
                Some(&header.kind.to_string()),
                Kind::Journal,
            ),
            BeginStamp::BeforeEnvelope {
                journal_version, ..
            } => document::layout_of(Some(*journal_version), None, Kind::Journal),
        }
    }
}

/// One journal record: the start of an apply, or the prior state of one thing about to change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub(crate) enum Record {
    /// An apply started; the records up to the next `begin` belong to it.
    Begin {
        /// Which lowlat applied, when, on which host, in which layout.
        #[serde(flatten)]
        stamp: BeginStamp,
        /// `/proc/sys/kernel/random/boot_id` at the time: run-time records of another boot
        /// describe a kernel state that no longer exists, and revert skips them.
        boot_id: Option<String>,
        /// The plan file applied.
        plan: String,
        /// Which part of the plan this apply covered (`runtime`, `boot` or `all`): verify says
        /// "not applied (runtime only)" of the persistent settings an `apply --runtime` left
        /// out. Journals of earlier versions lack it and read as `all`.
        #[serde(default)]
        scope: super::Scope,
        /// Directories created for the journal itself (outermost first), removed by revert.
        created_dirs: Vec<String>,
    },
    /// A kernel knob (/proc or /sys file) about to be written.
    Knob {
        /// System path.
        path: String,
        /// The bytes read before the change (restored verbatim in a directory tree).
        prior: Bytes,
        /// The value to write back on a live kernel (what the knob accepts, e.g. `madvise`
        /// where it reads `always [madvise] never`).
        restore: String,
    },
    /// A NIC knob (ethtool or NAPI sysfs) about to be set.
    Nic {
        /// The knob (`nic:eth0:rx-usecs`).
        setting: crate::tuning::setting_id::SettingId,
        /// Its value before, as a plan writes it (`50`, `on`).
        prior: String,
        /// The device the interface was: revert sets the knob of that device under the name
        /// it has then, never of another one that took the name (absent in journals of
        /// earlier versions, which go by the name).
        #[serde(default, flatten)]
        device: crate::machine::nic::identity::NicIdentity,
    },
    /// A configuration file about to be created or replaced.
    File {
        /// System path.
        path: String,
        /// The file before, or `None` when it did not exist.
        prior: Option<PriorFile>,
        /// Directories created to hold it (outermost first), removed by revert when empty.
        created_dirs: Vec<String>,
    },
    /// The CPU affinity of a task (thread) about to change.
    Affinity {
        /// Thread id.
        pid: u32,
        /// Its command name, to recognise it again.
        comm: String,
        /// The CPUs it was allowed on.
        prior: CpuSet,
    },
    /// The scheduling policy of a task (thread) about to change.
    Scheduler {
        /// Thread id.
        pid: u32,
        /// Its command name.
        comm: String,
        /// The policy number (`SCHED_OTHER` 0, `SCHED_FIFO` 1, `SCHED_RR` 2, ...).
        policy: u32,
        /// The real-time priority (0 for non-real-time policies).
        priority: u32,
    },
    /// A systemd unit about to be started, stopped, enabled, disabled or masked.
    Service {
        /// Unit name.
        unit: String,
        /// What `systemctl is-enabled` said (`enabled`, `disabled`, `masked`, `static`, ...).
        enablement: String,
        /// Whether `systemctl is-active` said `active`.
        active: bool,
    },
    /// A cpuset about to be made; revert moves the threads left in it to its parent and
    /// removes it.
    CpusetMade {
        /// Its system path (`/sys/fs/cgroup/cpuset/lowlat-isolated`).
        dir: String,
        /// The file of its parent that takes a thread id to move it there.
        parent_join: String,
    },
    /// Threads about to move to another cpuset, or whose affinity a partition is about to
    /// change: each one's cpuset and affinity.
    CpusetThreads {
        /// The hierarchy's mount point.
        mount: String,
        /// Its cgroup version.
        version: crate::machine::cgroup_cpuset::CgroupVersion,
        /// The threads.
        threads: Vec<PlacedThread>,
    },
    /// The kernel arguments of one boot entry (as grubby shows them) about to change.
    KernelArgs {
        /// The kernel image of the entry (`/boot/vmlinuz-...`).
        kernel: String,
        /// Its whole argument string before.
        prior: String,
        /// The argument keys lowlat changes; revert restores only those.
        keys: Vec<String>,
    },
}

/// CRC-32 (IEEE 802.3, reflected, as zlib computes it).
pub(crate) fn crc32(bytes: &[u8]) -> u32 {
    const TABLE: [u32; 256] = {
        let mut table = [0u32; 256];
        let mut n = 0;
        while n < 256 {
            let mut c = n as u32;
            let mut k = 0;
            while k < 8 {
                c = if c & 1 != 0 {
                    0xedb8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                };
                k += 1;
            }
            table[n] = c;
            n += 1;
        }
        table
    };
    let mut crc = !0u32;
    for &b in bytes {
        crc = TABLE[((crc ^ u32::from(b)) & 0xff) as usize] ^ (crc >> 8);
    }
    !crc
}

const LINE_START: &str = "{\"crc32\":\"";
const ENTRY_KEY: &str = "\",\"entry\":";

/// What the checksum of a line covers.
#[derive(Serialize, Deserialize)]
struct Line {
    seq: usize,
    record: Record,
}

/// Journal line number `seq` (1-based) holding `record`, with its newline.
pub(crate) fn encode(seq: usize, record: &Record) -> String {
    let line = Line {
        seq,
        record: record.clone(),
    };
    // A record holds only strings, numbers and lists: serialising it cannot fail.
    let json = serde_json::to_string(&line).unwrap_or_default();
    format!(
        "{LINE_START}{:08x}{ENTRY_KEY}{json}}}\n",
        crc32(json.as_bytes())
    )
}

/// Why one journal line is not a record.
#[derive(Debug, thiserror::Error)]
enum LineError {
    #[error("not UTF-8 text")]
    NotText,
    #[error("does not start with {{\"crc32\":\"")]
    NoStart,
    #[error("too short")]
    TooShort,
    #[error("'{0}' is not a checksum")]
    BadChecksum(String),
    #[error("is not {{\"crc32\":...,\"entry\":{{...}}}}")]
    NoEntry,
    #[error("checksum mismatch (line says {stored:08x}, content gives {actual:08x})")]
    Mismatch { stored: u32, actual: u32 },
    #[error("not a journal record: {0}")]
    NotRecord(serde_json::Error),
    #[error("record number {found} found on line {seq}: lines are missing or repeated")]
    OutOfOrder { found: usize, seq: usize },
    #[error(
        "the last line is cut off and does not start like a record (it is not a line lowlat was appending)"
    )]
    TornNotRecord,
}

/// Decodes line `seq` (without its newline).
fn decode(line: &[u8], seq: usize) -> Result<Record, LineError> {
    let text = std::str::from_utf8(line).map_err(|_| LineError::NotText)?;
    let rest = text.strip_prefix(LINE_START).ok_or(LineError::NoStart)?;
    let (crc, rest) = (
        rest.get(..8).ok_or(LineError::TooShort)?,
        rest.get(8..).unwrap_or(""),
    );
    let stored =
        u32::from_str_radix(crc, 16).map_err(|_| LineError::BadChecksum(crc.to_string()))?;
    let json = rest
        .strip_prefix(ENTRY_KEY)
        .and_then(|r| r.strip_suffix('}'))
        .ok_or(LineError::NoEntry)?;
    let actual = crc32(json.as_bytes());
    if actual != stored {
        return Err(LineError::Mismatch { stored, actual });
    }
    let line: Line = serde_json::from_str(json).map_err(LineError::NotRecord)?;
    if line.seq != seq {
        return Err(LineError::OutOfOrder {
            found: line.seq,
            seq,
        });
    }
    Ok(line.record)
}

/// Whether `tail` can be a line cut while lowlat appended it: it starts like a record.
fn starts_like_a_record(tail: &[u8]) -> bool {
    let start = LINE_START.as_bytes();
    tail.starts_with(start) || start.starts_with(tail)
}

/// One record and the 1-based line it was read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    /// 1-based line number in the journal.
    pub line: usize,
    /// The record.
    pub record: Record,
}

/// A journal read back and checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Journal {
    /// The records, in the order they were written.
    pub entries: Vec<Entry>,
    /// The 1-based number of a torn last line that was dropped (see the module docs).
    pub torn_last_line: Option<usize>,
    /// The length in bytes of the whole lines (everything but a torn last line).
    pub whole_len: usize,
}

/// Why a journal cannot be used. Revert changes nothing when it sees one.
#[derive(Debug, thiserror::Error)]
pub(crate) enum JournalError {
    /// The journal is damaged.
    #[error(
        "{path}:{line}: {problem}; the journal is damaged, so lowlat changed nothing. Keep a copy of the file: each line before {line} still holds one prior value (JSON after \"record\":) to restore by hand"
    )]
    Damaged {
        /// The journal's system path.
        path: String,
        /// 1-based line.
        line: usize,
        /// What is wrong with it.
        problem: String,
    },
    /// The journal could not be read.
    #[error(transparent)]
    Read(#[from] ReadError),
}

/// Checks and decodes a whole journal (`path` is only used in messages).
pub(crate) fn parse(bytes: &[u8], path: &str) -> Result<Journal, JournalError> {
    let damaged = |line: usize, problem: String| JournalError::Damaged {
        path: path.to_string(),
        line,
        problem,
    };
    let mut journal = Journal {
        entries: Vec::new(),
        torn_last_line: None,
        whole_len: bytes.len(),
    };
    let mut lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
    // Text ending in a newline splits into a last empty piece; anything else there is a line
    // that was being written when the writer stopped.
    let tail = lines.pop().filter(|last| !last.is_empty());
    for (i, line) in lines.iter().enumerate() {
        let record = decode(line, i + 1).map_err(|problem| damaged(i + 1, problem.to_string()))?;
        journal.entries.push(Entry {
            line: i + 1,
            record,
        });
    }
    if let Some(tail) = tail {
        let line = lines.len() + 1;
        match decode(tail, line) {
            // Everything but the newline made it to disk: the record is whole.
            Ok(record) => journal.entries.push(Entry { line, record }),
            // Bytes that are no record at all (NULs after a power loss, text edited by hand):
            // damage, not an interrupted append.
            Err(_) if !starts_like_a_record(tail) => {
                return Err(damaged(line, LineError::TornNotRecord.to_string()));
            }
            // Cut while being appended: its change was never made (records come first).
            Err(_) => {
                journal.torn_last_line = Some(line);
                journal.whole_len = bytes.len() - tail.len();
            }
        }
    }
    match journal.entries.first() {
        None => {}
        Some(Entry {
            record: Record::Begin { stamp, .. },
            ..
        }) => {
            if let Err(e) = stamp.layout() {
                return Err(damaged(
                    1,
                    format!("{e}; revert with the lowlat that applied"),
                ));
            }
        }
        Some(first) => {
            return Err(damaged(
                first.line,
                "the journal does not start with a begin record (its start is missing)".into(),
            ));
        }
    }
    Ok(journal)
}

/// Reads the journal under `root`; `None` when there is none (nothing to revert).
pub(crate) fn read(root: &SysRoot) -> Result<Option<Journal>, JournalError> {
    match root.read_bytes(JOURNAL_PATH) {
        Ok(bytes) => parse(&bytes, JOURNAL_PATH).map(Some),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Why records cannot be appended.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AppendError {
    /// The existing journal is damaged or unreadable.
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// Writing failed.
    #[error(transparent)]
    Write(#[from] WriteError),
}

/// Replaces the journal under `root` with `records` alone, numbered from 1 (revert keeps the
/// records it could not restore, each after the `begin` of its apply).
pub(crate) fn rewrite(root: &SysRoot, records: &[&Record]) -> Result<(), WriteError> {
    let lines: String = records
        .iter()
        .enumerate()
        .map(|(at, record)| encode(at + 1, record))
        .collect();
    root.replace_file(
        JOURNAL_PATH,
        lines.as_bytes(),
        crate::sysroot::Perms::mode(0o600),
    )
}

/// Appends records after those of earlier applies, writing the `begin` record just before the
/// first one, so that an apply that changes nothing leaves no trace.
pub(crate) struct Writer<'a> {
    root: &'a SysRoot,
    begin: Option<Record>,
    next_seq: usize,
}

impl<'a> Writer<'a> {
    /// A writer that will start with `begin`. The existing journal must be sound; a torn last
    /// line left by a crash is cut off first (its change was never made), so that the next
    /// record does not follow half a line.
    pub(crate) fn open(root: &'a SysRoot, begin: Record) -> Result<Self, AppendError> {
        let mut next_seq = 1;
        if let Some(journal) = read(root)? {
            next_seq = journal.entries.len() + 1;
            if journal.torn_last_line.is_some() {
                let whole = root.read_bytes(JOURNAL_PATH).map_err(JournalError::from)?;
                let whole = whole.get(..journal.whole_len).unwrap_or(&whole);
                root.replace_file(JOURNAL_PATH, whole, crate::sysroot::Perms::mode(0o600))?;
            }
        }
        Ok(Self {
            root,
            begin: Some(begin),
            next_seq,
        })
    }

    /// Writes the pending `begin` record, if it is still pending; returns whether it wrote.
    pub(crate) fn start(&mut self) -> Result<bool, WriteError> {
        match self.begin.take() {
            Some(begin) => self.write(&begin).map(|()| true),
            None => Ok(false),
        }
    }

    /// Appends `record` durably (after the pending `begin`, if any).
    pub(crate) fn append(&mut self, record: &Record) -> Result<(), WriteError> {
        self.start()?;
        self.write(record)
    }

    fn write(&mut self, record: &Record) -> Result<(), WriteError> {
        self.root.append_durably(
            JOURNAL_PATH,
            encode(self.next_seq, record).as_bytes(),
            0o600,
        )?;
        self.next_seq += 1;
        Ok(())
    }

    /// Whether anything was written.
    pub(crate) fn started(&self) -> bool {
        self.begin.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn begin() -> Record {
        Record::Begin {
            stamp: BeginStamp::now("h"),
            boot_id: Some("b".into()),
            plan: "/p.json".into(),
            scope: super::super::Scope::All,
            created_dirs: vec![],
        }
    }

    fn knob(path: &str) -> Record {
        Record::Knob {
            path: path.into(),
            prior: Bytes::of(b"1\n"),
            restore: "1".into(),
        }
    }

    fn text(records: &[Record]) -> String {
        records
            .iter()
            .enumerate()
            .map(|(i, r)| encode(i + 1, r))
            .collect()
    }

    #[test]
    fn crc32_matches_zlib() {
        assert_eq!(crc32(b"123456789"), 0xcbf4_3926);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn bytes_round_trip_text_and_binary() {
        for bytes in [&b"abc\n"[..], &[0xff, 0x00, 0x10][..], &[][..]] {
            assert_eq!(Bytes::of(bytes).to_vec().unwrap(), bytes);
        }
        assert!(matches!(Bytes::of(&[0xff]), Bytes::Hex(h) if h == "ff"));
        assert_eq!(Bytes::Hex("f".into()).to_vec(), None);
        assert_eq!(Bytes::Hex("zz".into()).to_vec(), None);
    }

    #[test]
    fn round_trips_records() {
        let records = vec![
            begin(),
            knob("/proc/sys/vm/stat_interval"),
            Record::File {
                path: "/etc/x".into(),
                prior: None,
                created_dirs: vec!["/etc".into()],
            },
            Record::Affinity {
                pid: 3,
                comm: "kthreadd".into(),
                prior: CpuSet::parse_list("0-3").unwrap(),
            },
        ];
        let journal = parse(text(&records).as_bytes(), "j").unwrap();
        let back: Vec<Record> = journal.entries.into_iter().map(|e| e.record).collect();
        assert_eq!(back, records);
        assert_eq!(journal.torn_last_line, None);
    }

    #[test]
    fn a_torn_last_line_is_dropped_and_nothing_else_is_tolerated() {
        let whole = text(&[begin(), knob("/a"), knob("/b")]);
        let cut = &whole[..whole.len() - 10];
        let journal = parse(cut.as_bytes(), "j").unwrap();
        assert_eq!(journal.entries.len(), 2);
        assert_eq!(journal.torn_last_line, Some(3));

        // Only the newline lost: the record is whole and kept.
        let journal = parse(&whole.as_bytes()[..whole.len() - 1], "j").unwrap();
        assert_eq!((journal.entries.len(), journal.torn_last_line), (3, None));

        // A torn line followed by another one is damage, with its line number.
        let mut middle = whole.lines().map(String::from).collect::<Vec<_>>();
        middle[1].truncate(20);
        let err = parse(format!("{}\n", middle.join("\n")).as_bytes(), "/var/j")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("/var/j:2: "), "{err}");
        assert!(err.contains("changed nothing"), "{err}");
    }

    #[test]
    fn nul_bytes_or_a_lone_unterminated_line_are_damage_not_a_torn_append() {
        // W-4: each of these was taken for a torn last line and the journal was deleted.
        let whole = text(&[begin(), knob("/a")]);
        let mut nul_tail = whole.clone().into_bytes();
        nul_tail.extend([0u8; 64]);
        let cases: [(&[u8], &str); 3] = [
            (&[0u8; 512], "/var/j:1: "),
            (b"some text without a newline", "/var/j:1: "),
            (&nul_tail, "/var/j:3: "),
        ];
        for (bytes, at) in cases {
            let err = parse(bytes, "/var/j").unwrap_err().to_string();
            assert!(err.starts_with(at), "{err}");
        }
    }

    #[test]
    fn a_flipped_byte_is_a_checksum_error_naming_the_line() {
        let whole = text(&[begin(), knob("/proc/sys/vm/stat_interval")]);
        let flipped = whole.replace("stat_interval", "stat_intervaX");
        let err = parse(flipped.as_bytes(), "j").unwrap_err().to_string();
        assert!(err.starts_with("j:2: checksum mismatch"), "{err}");
    }

    #[test]
    fn a_journal_must_start_with_a_begin_of_a_known_version() {
        let err = parse(text(&[knob("/a")]).as_bytes(), "j")
            .unwrap_err()
            .to_string();
        assert!(err.contains("j:1: the journal does not start"), "{err}");
        let mut future = begin();
        if let Record::Begin {
            stamp: BeginStamp::Envelope { header },
            ..
        } = &mut future
        {
            header.schema_version = 99;
        }
        let err = parse(text(&[future]).as_bytes(), "j")
            .unwrap_err()
            .to_string();
        assert!(err.contains("schema_version 99"), "{err}");
        assert!(parse(b"", "j").unwrap().entries.is_empty());
        let err = parse(b"garbage\n", "j").unwrap_err().to_string();
        assert!(err.starts_with("j:1: does not start"), "{err}");
    }

    #[test]
    fn the_writer_starts_with_begin_only_when_something_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let root = SysRoot::dir(dir.path());
        root.create_dirs(STATE_DIR).unwrap();
        let writer = Writer::open(&root, begin()).unwrap();
        assert!(!writer.started());
        assert!(read(&root).unwrap().is_none());
        let mut writer = Writer::open(&root, begin()).unwrap();
        writer.append(&knob("/a")).unwrap();
        writer.append(&knob("/b")).unwrap();
        let journal = read(&root).unwrap().unwrap();
        assert_eq!(journal.entries.len(), 3);
        assert!(matches!(journal.entries[0].record, Record::Begin { .. }));
        assert_eq!(journal.entries[2].line, 3);

        // A crash tore the next line: the next apply cuts it off and goes on after line 3.
        root.append_durably(JOURNAL_PATH, b"{\"crc32\":\"12", 0o600)
            .unwrap();
        assert_eq!(read(&root).unwrap().unwrap().torn_last_line, Some(4));
        let mut writer = Writer::open(&root, begin()).unwrap();
        writer.append(&knob("/c")).unwrap();
        let journal = read(&root).unwrap().unwrap();
        assert_eq!(journal.torn_last_line, None);
        assert_eq!(journal.entries.len(), 5);
        assert_eq!(journal.entries[4].record, knob("/c"));
    }

    #[test]
    fn a_begin_without_a_scope_reads_as_a_whole_apply() {
        // Journals written before the scope was recorded.
        let begin = begin();
        let line = encode(1, &begin).replace(r#","scope":"all""#, "");
        let json = &line[LINE_START.len() + 8 + ENTRY_KEY.len()..line.len() - 2];
        let line = format!(
            "{LINE_START}{:08x}{ENTRY_KEY}{json}}}\n",
            crc32(json.as_bytes())
        );
        assert!(!line.contains("scope"), "{line}");
        let journal = parse(line.as_bytes(), "j").unwrap();
        assert_eq!(journal.entries[0].record, begin);
    }

    #[test]
    fn a_missing_line_in_the_middle_is_damage() {
        let whole = text(&[begin(), knob("/a"), knob("/b")]);
        let lines: Vec<&str> = whole.lines().collect();
        let gap = format!("{}\n{}\n", lines[0], lines[2]);
        let err = parse(gap.as_bytes(), "j").unwrap_err().to_string();
        assert!(err.starts_with("j:2: record number 3"), "{err}");
    }

    proptest::proptest! {
        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400)) {
            let _ = parse(&bytes, "j");
        }
    }
}

//! The envelope of every JSON document lowlat writes: which layout, which kind, which lowlat,
//! when and on which host; the document's own fields (its body) follow in the same object.
//!
//! ```json
//! { "schema_version": 2, "kind": "plan", "tool": { "name": "lowlat", "version": "0.1.0" },
//!   "created": "2026-11-23T20:38:25.123Z", "host": "db1", ...body... }
//! ```
//!
//! Each kind has its own layout version ([`Kind::schema_version`]), raised when a field of that
//! kind changes meaning or goes:
//!
//! | kind              | schema_version | written by                     | read back by        |
//! |-------------------|----------------|--------------------------------|---------------------|
//! | `inventory`       | 4              | `inventory --json`             |                     |
//! | `audit`           | 3              | `audit --json`                 |                     |
//! | `plan`            | 3 (2 is read)  | `plan --json`, `plan.json`     | apply, verify       |
//! | `verify`          | 2              | `verify --json`                |                     |
//! | `apply`           | 1              | `apply --json`                 | the Ansible module  |
//! | `revert`          | 1              | `revert --json`                | the Ansible module  |
//! | `journal`         | 2              | apply (the `begin` record)     | revert              |
//! | `snapshot`        | 2              | `snapshot` (`manifest.json`)   | `--snapshot FILE`   |
//! | `measure-jitter`  | 2              | `measure jitter --json`        |                     |
//! | `measure-timer`   | 2              | `measure timer --json`         |                     |
//! | `measure-membw`   | 2              | `measure membw --json`         |                     |
//! | `measure-memlat`  | 2              | `measure memlat --json`        |                     |
//! | `measure-c2c`     | 2              | `measure c2c --json`           |                     |
//! | `measure-wakeup`  | 2              | `measure wakeup --json`        |                     |
//! | `measure-ipi`     | 2              | `measure ipi --json`           |                     |
//! | `measure-ipi-mesh`| 2              | `measure ipi --mesh --json`    |                     |
//! | `watch-sample`    | 2              | `watch --json`, one per line   |                     |
//! | `measure-hwlat`   | 2              | `measure hwlat --json`         |                     |
//! | `measure-freq`    | 2              | `measure freq --json`          |                     |
//! | `measure-net`     | 2              | `measure net --json`           |                     |
//! | `bios`            | 2              | `bios read -o FILE`, `--json`  | bios apply, verify  |
//! | `bios-journal`    | 2              | `bios apply --journal FILE`    | `bios revert`       |
//! | `bios-verify`     | 2              | `bios verify --json`           |                     |
//! | `check`           | 2              | `check --json`, `check.json`   |                     |
//! | `compare`         | 3              | `compare --json`               | `report`            |
//! | `calibration`     | 1              | `compare --calibrate --json`   |                     |
//! | `fleet`           | 2              | `fleet report --json`          | `report`, `--html`  |
//! | `profile`         | 1              | `profile show --json`          |                     |
//! | `prove`           | 1              | `prove` (`DIR/prove.json`)     | `prove --resume`    |
//!
//! Schema 1 is the layout before the envelope (`lowlat_version` in plan.json, verify and the
//! journal; `tool_version` and `captured_at` in the snapshot manifest). Where lowlat reads a
//! document back it still accepts schema 1 ([`Layout::BeforeEnvelope`]).

use serde::{Deserialize, Serialize};

use crate::sysroot::SysRoot;

/// What a document is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// The machine model (`lowlat inventory --json`).
    Inventory,
    /// Rules checked against the machine (`lowlat audit --json`).
    Audit,
    /// The placement of a workload's threads (`lowlat audit --pid/--comm --json`).
    AuditWorkload,
    /// The desired state of one machine (plan.json).
    Plan,
    /// The machine checked against a plan (`lowlat verify --json`).
    Verify,
    /// What `lowlat apply --json` changed (or would change in a dry run), setting by setting.
    Apply,
    /// What `lowlat revert --json` put back (or would put back in a dry run), record by record.
    Revert,
    /// The `begin` record of an apply journal.
    Journal,
    /// The manifest of a snapshot archive.
    Snapshot,
    /// Busy-loop gaps (`lowlat measure jitter`).
    MeasureJitter,
    /// Absolute-deadline timer wake-ups (`lowlat measure timer`).
    MeasureTimer,
    /// STREAM memory bandwidth (`lowlat measure membw`).
    MeasureMembw,
    /// Pointer-chase memory latency (`lowlat measure memlat`).
    MeasureMemlat,
    /// Core-to-core cache-line round trips (`lowlat measure c2c`).
    MeasureC2c,
    /// Cross-core wake-up latency (`lowlat measure wakeup`).
    MeasureWakeup,
    /// Inter-processor interrupt cost per CPU pair (`lowlat measure ipi`).
    MeasureIpi,
    /// Inter-processor interrupt throughput of all CPUs at once (`lowlat measure ipi --mesh`).
    MeasureIpiMesh,
    /// One interval of `lowlat watch --json` (one JSON line each).
    WatchSample,
    /// Hardware and firmware latency from the hwlat tracer (`lowlat measure hwlat`).
    MeasureHwlat,
    /// Effective frequency (`lowlat measure freq`).
    MeasureFreq,
    /// Network round trips (`lowlat measure net`).
    MeasureNet,
    /// BIOS attributes, pending values and registry read from a BMC (`lowlat bios read`).
    Bios,
    /// The values `lowlat bios apply` replaced, for `lowlat bios revert`.
    BiosJournal,
    /// BIOS attributes checked against what was asked (`lowlat bios verify --json`).
    BiosVerify,
    /// The audit, the measurements and the profile's targets in one verdict (`lowlat check`).
    Check,
    /// Two arms of runs compared, with verdicts (`lowlat compare`).
    Compare,
    /// Untouched runs split every way, and how often compare called a difference
    /// (`lowlat compare --calibrate`).
    Calibration,
    /// Many hosts grouped, with each group's outliers and the rules' tallies
    /// (`lowlat fleet report --json`).
    Fleet,
    /// A profile resolved, each expectation with where it was set (`lowlat profile show
    /// --json`).
    Profile,
    /// Where a `lowlat prove` run stands: its steps, the machine's state (as before or as
    /// planned) and the verdict (`DIR/prove.json`).
    Prove,
}

impl Kind {
    /// The layout version this lowlat writes for the kind (the table in the module docs).
    pub fn schema_version(self) -> u32 {
        match self {
            Kind::Inventory => 4, // 3: cpufreq policies lost `cur_khz`; 4: sparse IRQ counts
            Kind::Audit => 3,     // 3: remediation settings grouped as plan.json's
            Kind::AuditWorkload => 2, // born with the envelope, numbered as its kinds are
            Kind::Plan => 3,      // 3: grouped settings; 2 has none and still reads
            Kind::Verify => 2,
            Kind::Apply => 1,
            Kind::Revert => 1,
            Kind::Journal => 2,
            Kind::Snapshot => 2,
            Kind::MeasureJitter => 2,
            Kind::MeasureTimer => 2,
            Kind::MeasureMembw => 2,
            Kind::MeasureMemlat => 2,
            Kind::MeasureC2c => 2,
            Kind::MeasureWakeup => 2,
            Kind::MeasureIpi => 2,
            Kind::MeasureIpiMesh => 2,
            Kind::WatchSample => 2,
            Kind::MeasureHwlat => 2,
            Kind::MeasureFreq => 2,
            Kind::MeasureNet => 2, // born with the envelope, numbered as its kinds are
            Kind::Bios => 2,
            Kind::BiosJournal => 2,
            Kind::BiosVerify => 2,
            Kind::Check => 3, // 3: verdict `not-proven`, per-CPU outcome and busy loop needed
            Kind::Compare => 3, // 3: primary endpoints, environment, ratios, detail rows
            Kind::Calibration => 1,
            Kind::Fleet => 2, // born with the envelope, numbered as its kinds are
            Kind::Profile => 1,
            Kind::Prove => 1,
        }
    }

    /// The oldest envelope layout of the kind this lowlat still reads: the one it writes, but
    /// for plan.json, whose schema 2 (before grouped settings) reads as it is.
    pub fn oldest_schema_version(self) -> u32 {
        match self {
            Kind::Plan => 2,
            other => other.schema_version(),
        }
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = serde_json::to_value(self).ok();
        f.write_str(name.as_ref().and_then(|v| v.as_str()).unwrap_or("?"))
    }
}

/// The program that wrote a document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tool {
    /// Always `lowlat`.
    pub name: String,
    /// Its version (`0.1.0`).
    pub version: String,
}

impl Tool {
    /// This lowlat.
    pub fn this() -> Self {
        Self {
            name: env!("CARGO_PKG_NAME").to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
        }
    }
}

/// The fields every document starts with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    /// The layout version of this kind ([`Kind::schema_version`]).
    pub schema_version: u32,
    /// What the document is.
    pub kind: Kind,
    /// The lowlat that wrote it.
    pub tool: Tool,
    /// When it was written: RFC 3339, UTC.
    pub created: String,
    /// Host name of the machine it describes (`/proc/sys/kernel/hostname`), or `unknown`.
    pub host: String,
}

impl Header {
    /// The header of a `kind` document about `host`, written now by this lowlat.
    pub fn new(kind: Kind, host: impl Into<String>) -> Self {
        Self {
            schema_version: kind.schema_version(),
            kind,
            tool: Tool::this(),
            created: now(),
            host: host.into(),
        }
    }
}

/// A document: the [`Header`], then the body's fields, in one JSON object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Document<T> {
    /// Which layout, kind, lowlat, time and host.
    #[serde(flatten)]
    pub header: Header,
    /// The document's own fields.
    #[serde(flatten)]
    pub body: T,
}

impl<T: Serialize> Document<T> {
    /// Wraps `body` in the envelope of a `kind` document about `host`.
    pub fn new(kind: Kind, host: impl Into<String>, body: T) -> Self {
        Self {
            header: Header::new(kind, host),
            body,
        }
    }

    /// The document as pretty-printed JSON with a final newline.
    pub fn to_json(&self) -> Result<String, serde_json::Error> {
        Ok(serde_json::to_string_pretty(self)? + "\n")
    }

    /// [`Document::to_json`]'s bytes written to `out` as they are serialized (give it a
    /// buffered writer: serde_json writes a few bytes at a time).
    pub fn write_json(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        serde_json::to_writer_pretty(&mut *out, self)?;
        out.write_all(b"\n")
    }

    /// The document on one line, without the newline (for streams of JSON lines).
    pub fn to_json_line(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string(self)
    }
}

/// The time now as documents record it: RFC 3339, UTC (`2026-11-23T20:38:25.123456789Z`).
pub(crate) fn now() -> String {
    jiff::Timestamp::now().to_string()
}

/// A document's `host` (and a plan's target host): the machine's host name
/// (`/proc/sys/kernel/hostname`), or [`UNKNOWN_HOST`] where it has none. The one rule; a
/// machine already read gives `machine.kernel.hostname.get()`, a root [`host_name`].
pub(crate) fn host(name: Option<impl AsRef<str>>) -> String {
    name.map_or_else(|| UNKNOWN_HOST.to_string(), |n| n.as_ref().to_string())
}

/// The host name under `root` as documents record it ([`host`]: `unknown` when it cannot be
/// read).
pub(crate) fn host_name(root: &SysRoot) -> String {
    host(root.read_value("/proc/sys/kernel/hostname").ok())
}

/// The `host` of a document whose machine has no readable host name.
pub(crate) const UNKNOWN_HOST: &str = "unknown";

/// Which layout a document read back has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Layout {
    /// Schema 1, written before the envelope: no `kind`; identity in kind-specific fields.
    BeforeEnvelope,
    /// The envelope, at this lowlat's version of the kind.
    Envelope,
}

/// Why a document cannot be read back by this lowlat.
#[derive(Debug, thiserror::Error)]
pub enum LayoutError {
    /// Not JSON, or no object.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// A document of another kind.
    #[error("the document is of kind {found}; give one of kind {expected}")]
    Kind {
        /// The kind the reader wants.
        expected: Kind,
        /// The kind the document says it is.
        found: String,
    },
    /// A layout version this lowlat does not know.
    #[error(
        "{kind} document has schema_version {found}, this lowlat reads 1 to {}",
        kind.schema_version()
    )]
    Version {
        /// The kind read.
        kind: Kind,
        /// The version found.
        found: u32,
    },
}

/// Reads the first fields of a `kind` document: which layout the rest has. A document without
/// `kind` is schema 1 when its `schema_version` is 1 or absent (the snapshot manifest had
/// none).
pub(crate) fn layout(text: &str, kind: Kind) -> Result<Layout, LayoutError> {
    let stamp: Stamp = serde_json::from_str(text)?;
    layout_of(stamp.schema_version, stamp.kind.as_deref(), kind)
}

/// The envelope's fields as a reader meets them before it knows what a JSON file is: each may
/// be missing (a document before the envelope, a JSON file that is no lowlat document), and
/// `kind` may name a kind this lowlat does not know. Read with it first, then the document
/// with its writer's type.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub(crate) struct Stamp {
    /// [`Header::schema_version`], when the document has one.
    pub schema_version: Option<u32>,
    /// [`Header::kind`] as written.
    pub kind: Option<String>,
    /// [`Header::host`].
    pub host: Option<String>,
}

/// [`layout`] on the two fields already read.
pub(crate) fn layout_of(
    schema_version: Option<u32>,
    found_kind: Option<&str>,
    kind: Kind,
) -> Result<Layout, LayoutError> {
    match (found_kind, schema_version) {
        (None, None | Some(1)) => Ok(Layout::BeforeEnvelope),
        (Some(found), _) if found != kind.to_string() => Err(LayoutError::Kind {
            expected: kind,
            found: found.to_string(),
        }),
        (Some(_), Some(found))
            if (kind.oldest_schema_version()..=kind.schema_version()).contains(&found) =>
        {
            Ok(Layout::Envelope)
        }
        (_, found) => Err(LayoutError::Version {
            kind,
            found: found.unwrap_or(0),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Body {
        files: usize,
    }

    #[test]
    fn the_header_comes_first_then_the_body() {
        let doc = Document::new(Kind::Snapshot, "db1", Body { files: 3 });
        let text = doc.to_json().unwrap();
        let keys: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("  \""))
            .map(|l| l.trim().split('"').nth(1).unwrap())
            .collect();
        assert_eq!(
            keys,
            ["schema_version", "kind", "tool", "created", "host", "files"]
        );
        assert!(text.contains("\"kind\": \"snapshot\""));
        assert!(doc.header.created.ends_with('Z'));
        let back: Document<Body> = serde_json::from_str(&text).unwrap();
        assert_eq!(back, doc);
    }

    #[test]
    fn kinds_are_named_in_kebab_case() {
        assert_eq!(Kind::MeasureC2c.to_string(), "measure-c2c");
        assert_eq!(Kind::Plan.to_string(), "plan");
    }

    #[test]
    fn layouts_are_told_apart() {
        let current = Document::new(Kind::Plan, "h", Body { files: 1 })
            .to_json()
            .unwrap();
        assert_eq!(layout(&current, Kind::Plan).unwrap(), Layout::Envelope);
        assert_eq!(
            layout(
                r#"{"schema_version":1,"lowlat_version":"0.1.0"}"#,
                Kind::Plan
            )
            .unwrap(),
            Layout::BeforeEnvelope
        );
        assert_eq!(
            layout(r#"{"format":"lowlat-snapshot"}"#, Kind::Snapshot).unwrap(),
            Layout::BeforeEnvelope
        );
        let err = layout(r#"{"schema_version":99}"#, Kind::Plan).unwrap_err();
        assert!(err.to_string().contains("schema_version 99"), "{err}");
        let err = layout(&current, Kind::Journal).unwrap_err();
        // Named by kind, without an article that reads "a inventory", "a audit".
        assert_eq!(
            err.to_string(),
            "the document is of kind plan; give one of kind journal"
        );
    }
}

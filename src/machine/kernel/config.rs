//! The kernel's build configuration: what the running kernel can do, whatever its command line
//! asks for. A kernel built without `CONFIG_NO_HZ_FULL` drops `nohz_full=` at boot ("Housekeeping:
//! nohz unsupported"), one without `CONFIG_RCU_NOCB_CPU` ignores `rcu_nocbs=`.
//!
//! Sources, first found wins: `/proc/config.gz` (`CONFIG_IKCONFIG_PROC`, gzip), then the file
//! installed beside the kernel, `/boot/config-RELEASE`, then `/lib/modules/RELEASE/config`. Each
//! is read through the SysRoot, so a snapshot carries the one that was read. A source that exists
//! but cannot be read whole (a cut-off gzip stream, a damaged one) is warned about, naming the
//! file, and the next one is tried: a config read in part would say "not set" of options that
//! are set.

use std::collections::BTreeMap;
use std::io::Read;

use serde::{Deserialize, Serialize};

use crate::machine::{Avail, Reader};
use crate::sysroot::MAX_FILE_BYTES;

/// The options lowlat judges a kernel by; the others are not kept.
pub const OPTIONS: &[&str] = &[
    "CONFIG_CPU_ISOLATION",
    "CONFIG_NO_HZ_FULL",
    "CONFIG_NO_HZ_IDLE",
    "CONFIG_HZ_PERIODIC",
    "CONFIG_HZ",
    "CONFIG_RCU_NOCB_CPU",
    "CONFIG_RCU_NOCB_CPU_DEFAULT_ALL",
    "CONFIG_PREEMPT_RT",
    // The RT patch set before it was merged (3.x-5.3) named its full model so.
    "CONFIG_PREEMPT_RT_FULL",
    "CONFIG_PREEMPT_DYNAMIC",
    "CONFIG_RT_GROUP_SCHED",
    "CONFIG_HWLAT_TRACER",
    "CONFIG_OSNOISE_TRACER",
    "CONFIG_TIMERLAT_TRACER",
];

/// `/proc/config.gz`, present when the kernel is built with `CONFIG_IKCONFIG_PROC`.
pub const PROC_CONFIG: &str = "/proc/config.gz";

/// The build configuration of the running kernel, the options of [`OPTIONS`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelConfig {
    /// The file it was read from (`/proc/config.gz`, `/boot/config-6.8.0-45-generic`).
    pub source: String,
    /// Each option of [`OPTIONS`] the file sets, with its value as written (`y`, `m`, `250`, a
    /// quoted string); an option absent here is not set (`# ... is not set`, or not offered by
    /// this kernel's version or architecture).
    pub options: BTreeMap<String, String>,
}

impl KernelConfig {
    /// Whether `option` (`CONFIG_NO_HZ_FULL`) is built in or a module.
    pub fn enabled(&self, option: &str) -> bool {
        matches!(
            self.options.get(option).map(String::as_str),
            Some("y" | "m")
        )
    }

    /// Whether the kernel is PREEMPT_RT by its configuration (the merged option or the RT
    /// patch set's).
    pub fn preempt_rt(&self) -> bool {
        self.enabled("CONFIG_PREEMPT_RT") || self.enabled("CONFIG_PREEMPT_RT_FULL")
    }

    /// `option=value` as the file wrote it, or `# option is not set`: the evidence a finding
    /// quotes.
    pub fn line(&self, option: &str) -> String {
        match self.options.get(option) {
            Some(value) => format!("{option}={value}"),
            None => format!("# {option} is not set"),
        }
    }
}

/// Why a config source could not be read whole.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The gzip stream is damaged or ends early.
    #[error("not a whole gzip stream ({0}): the file is cut off or damaged")]
    Gzip(std::io::Error),
    /// It decompresses to more than any kernel config.
    #[error("decompresses to more than {MAX_FILE_BYTES} bytes: not a kernel config")]
    TooLarge,
    /// No line of it sets or unsets an option.
    #[error("no CONFIG_ line: not a kernel config")]
    NotAConfig,
}

/// Decompresses `/proc/config.gz`, refusing a cut-off or damaged stream (its CRC and length
/// are checked at the end) and more than [`MAX_FILE_BYTES`] of output.
pub(crate) fn gunzip(bytes: &[u8]) -> Result<String, ConfigError> {
    let mut text = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut text)
        .map_err(ConfigError::Gzip)?;
    if text.len() as u64 > MAX_FILE_BYTES {
        return Err(ConfigError::TooLarge);
    }
    // An empty input decodes to nothing without an error: no header is no gzip stream.
    if bytes.is_empty() {
        return Err(ConfigError::Gzip(std::io::ErrorKind::UnexpectedEof.into()));
    }
    Ok(String::from_utf8_lossy(&text).into_owned())
}

/// The options of [`OPTIONS`] set in a config text (`CONFIG_X=value` lines; `# CONFIG_X is
/// not set` and comments leave them out).
pub(crate) fn parse(text: &str) -> Result<BTreeMap<String, String>, ConfigError> {
    let mut options = BTreeMap::new();
    let mut any = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with("CONFIG_") || line.starts_with("# CONFIG_") {
            any = true;
        }
        let Some((name, value)) = line.split_once('=') else {
            continue;
        };
        if OPTIONS.contains(&name) {
            options.insert(name.to_string(), value.to_string());
        }
    }
    if !any {
        return Err(ConfigError::NotAConfig);
    }
    Ok(options)
}

/// Reads the configuration of the kernel `release` (from `/proc/sys/kernel/osrelease`), from
/// the first source that exists and reads whole.
pub fn read(r: &mut Reader, release: Option<&str>) -> Avail<KernelConfig> {
    let mut sources = vec![PROC_CONFIG.to_string()];
    if let Some(release) = release.filter(|r| !r.contains('/') && !r.is_empty()) {
        sources.push(format!("/boot/config-{release}"));
        sources.push(format!("/lib/modules/{release}/config"));
    }
    let mut damaged = Vec::new();
    for source in &sources {
        let bytes = match r.root.read_bytes(source) {
            Err(e) if e.is_not_found() => continue,
            // Never so on a kernel: a snapshot that listed /proc without reading the file
            // (an older lowlat's) holds an empty placeholder. Not there, so not a warning.
            Ok(bytes) if bytes.is_empty() => {
                damaged.push(format!(
                    "{source}: empty (a snapshot that did not capture it)"
                ));
                continue;
            }
            Ok(bytes) => bytes,
            Err(e) => {
                r.warnings.file(source, e.to_string());
                damaged.push(format!("{source}: {e}"));
                continue;
            }
        };
        let text = if source.ends_with(".gz") {
            gunzip(&bytes)
        } else {
            Ok(String::from_utf8_lossy(&bytes).into_owned())
        };
        match text.and_then(|text| parse(&text)) {
            Ok(options) => {
                return Avail::Available(KernelConfig {
                    source: source.clone(),
                    options,
                });
            }
            Err(e) => {
                r.warnings.file(source, e.to_string());
                damaged.push(format!("{source}: {e}"));
            }
        }
    }
    if damaged.is_empty() {
        let release_note = if release.is_none() {
            " (the release is unknown, so /boot was not looked at)"
        } else {
            ""
        };
        Avail::missing(format!(
            "no kernel config: none of {} exists{release_note}; load the configs module \
             (`modprobe configs`) for /proc/config.gz",
            sources.join(", ")
        ))
    } else {
        Avail::missing(damaged.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_tree::TestTree;
    use std::io::Write;

    const CONFIG: &str = "#\n# Automatically generated file; DO NOT EDIT.\n\
        CONFIG_CPU_ISOLATION=y\n# CONFIG_NO_HZ_FULL is not set\nCONFIG_NO_HZ_IDLE=y\n\
        CONFIG_HZ=250\nCONFIG_RCU_NOCB_CPU=y\nCONFIG_OSNOISE_TRACER=y\nCONFIG_EXT4_FS=m\n";

    fn gzip(text: &str) -> Vec<u8> {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        encoder.write_all(text.as_bytes()).unwrap();
        encoder.finish().unwrap()
    }

    #[test]
    fn parses_the_options_lowlat_keeps() {
        let options = parse(CONFIG).unwrap();
        assert_eq!(options.get("CONFIG_HZ").map(String::as_str), Some("250"));
        assert!(!options.contains_key("CONFIG_NO_HZ_FULL"));
        assert!(!options.contains_key("CONFIG_EXT4_FS"));
        let config = KernelConfig {
            source: PROC_CONFIG.into(),
            options,
        };
        assert!(config.enabled("CONFIG_RCU_NOCB_CPU"));
        assert!(!config.enabled("CONFIG_NO_HZ_FULL"));
        assert!(!config.preempt_rt());
        assert_eq!(
            config.line("CONFIG_NO_HZ_FULL"),
            "# CONFIG_NO_HZ_FULL is not set"
        );
        assert!(matches!(parse("hello\n"), Err(ConfigError::NotAConfig)));
    }

    #[test]
    fn reads_proc_config_gz_first() {
        let dir = TestTree::empty();
        dir.write(PROC_CONFIG, gzip(CONFIG));
        dir.write("/boot/config-6.1.0", "CONFIG_NO_HZ_FULL=y\n");
        let root = dir.root();
        let mut r = Reader::new(&root);
        let config = read(&mut r, Some("6.1.0"));
        let config = config.get().unwrap();
        assert_eq!(config.source, PROC_CONFIG);
        assert!(!config.enabled("CONFIG_NO_HZ_FULL"));
        assert!(r.warnings.into_vec().is_empty());
    }

    #[test]
    fn a_cut_off_config_gz_is_warned_about_and_the_next_source_read() {
        let dir = TestTree::empty();
        let whole = gzip(CONFIG);
        dir.write(PROC_CONFIG, &whole[..whole.len() - 6]);
        let root = dir.root();
        let mut r = Reader::new(&root);
        let config = read(&mut r, Some("6.1.0"));
        let reason = config.reason().unwrap();
        assert!(
            reason.contains("/proc/config.gz") && reason.contains("cut off"),
            "{reason}"
        );
        let warnings = r.warnings.into_vec();
        assert_eq!(warnings.len(), 1);
        assert_eq!(warnings[0].path, PROC_CONFIG);

        dir.write("/lib/modules/6.1.0/config", "CONFIG_NO_HZ_FULL=y\n");
        let root = dir.root();
        let mut r = Reader::new(&root);
        let config = read(&mut r, Some("6.1.0"));
        assert_eq!(config.get().unwrap().source, "/lib/modules/6.1.0/config");
        assert!(config.get().unwrap().enabled("CONFIG_NO_HZ_FULL"));
    }

    #[test]
    fn an_empty_placeholder_is_no_config_and_no_warning() {
        let dir = TestTree::empty();
        dir.write(PROC_CONFIG, "");
        let root = dir.root();
        let mut r = Reader::new(&root);
        let reason = read(&mut r, Some("6.1.0")).reason().unwrap().to_string();
        assert!(reason.contains("empty"), "{reason}");
        assert!(r.warnings.into_vec().is_empty());
    }

    #[test]
    fn garbage_and_absence() {
        assert!(matches!(gunzip(b""), Err(ConfigError::Gzip(_))));
        assert!(matches!(gunzip(b"not gzip"), Err(ConfigError::Gzip(_))));
        let dir = TestTree::empty();
        let root = dir.root();
        let mut r = Reader::new(&root);
        let reason = read(&mut r, None).reason().unwrap().to_string();
        assert!(reason.contains("modprobe configs"), "{reason}");
        assert!(r.warnings.into_vec().is_empty());
    }

    #[test]
    fn a_recording_root_records_the_config_it_read() {
        let dir = TestTree::empty();
        dir.write("/boot/config-6.1.0", CONFIG);
        let root = dir.root().recording();
        let mut r = Reader::new(&root);
        read(&mut r, Some("6.1.0")).get().unwrap();
        assert!(root.recorded().contains_key("/boot/config-6.1.0"));
    }
}

//! The kubelet's configuration file (`KubeletConfiguration`, kubelet.config.k8s.io/v1beta1):
//! the CPU manager policy, the CPUs it reserves for the system and the topology manager
//! policy, which must agree with the kernel's CPU partition.
//!
//! Read from `/var/lib/kubelet/config.yaml` under the root (where kubeadm writes it), or from
//! a file named on the command line (`lowlat audit --kubelet-config FILE`). A file that is not
//! YAML, not a KubeletConfiguration or names fields the kubelet does not have is refused with
//! the line or the fields named.

use serde::{Deserialize, Serialize};

use super::{Avail, CpuSet, Reader};
use crate::sysroot::ReadError;
use crate::text::escape_controls;

/// Where kubeadm installs the kubelet's configuration.
pub const LIVE_PATH: &str = "/var/lib/kubelet/config.yaml";

/// The kubelet settings lowlat judges, from one configuration file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KubeletConfig {
    /// The file it was read from.
    pub path: String,
    /// `cpuManagerPolicy` (`none` when absent, the kubelet's default).
    pub cpu_manager_policy: String,
    /// `reservedSystemCPUs`, when set.
    pub reserved_system_cpus: Option<CpuSet>,
    /// `topologyManagerPolicy` (`none` when absent, the kubelet's default).
    pub topology_manager_policy: String,
}

/// Why a kubelet configuration was refused; each message names the file and what to change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KubeletConfigError {
    /// Not YAML (the message carries the line and column).
    #[error("{}: not YAML: {message}", escape_controls(.path))]
    Yaml {
        /// The file.
        path: String,
        /// The parser's message.
        message: String,
    },
    /// YAML, but not a KubeletConfiguration.
    #[error("{}: not a KubeletConfiguration (kubelet.config.k8s.io/v1beta1): {problem}", escape_controls(.path))]
    NotKubelet {
        /// The file.
        path: String,
        /// What is wrong.
        problem: String,
    },
    /// Fields the kubelet does not have (the kubelet refuses or ignores them).
    #[error(
        "{}: unknown field(s) {}: KubeletConfiguration (kubelet.config.k8s.io/v1beta1) has no such field; fix or remove them",
        escape_controls(.path),
        escape_controls(.fields)
    )]
    UnknownFields {
        /// The file.
        path: String,
        /// The unknown names, comma-separated, each with the known name of other case when
        /// there is one.
        fields: String,
    },
    /// A known field with a value the kubelet cannot take.
    #[error("{}: {field}: {problem}", escape_controls(.path))]
    Field {
        /// The file.
        path: String,
        /// The field.
        field: &'static str,
        /// What is wrong, and what to write.
        problem: String,
    },
}

/// The JSON names of `KubeletConfiguration`'s fields, from the kubelet's types.go.
fn known_fields() -> impl Iterator<Item = &'static str> {
    include_str!("kubelet_fields.txt")
        .lines()
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
}

/// Parses a kubelet configuration file's `text`; `path` names it in errors.
pub fn parse(path: &str, text: &str) -> Result<KubeletConfig, KubeletConfigError> {
    let value: serde_norway::Value =
        serde_norway::from_str(text).map_err(|e| KubeletConfigError::Yaml {
            path: path.to_string(),
            message: e.to_string(),
        })?;
    let not_kubelet = |problem: String| KubeletConfigError::NotKubelet {
        path: path.to_string(),
        problem,
    };
    let map = value
        .as_mapping()
        .ok_or_else(|| not_kubelet("the document is not a mapping of fields".into()))?;
    let mut unknown = Vec::new();
    for key in map.keys() {
        let Some(key) = key.as_str() else {
            unknown.push(format!("{key:?}"));
            continue;
        };
        if known_fields().any(|known| known == key) {
            continue;
        }
        match known_fields().find(|known| known.eq_ignore_ascii_case(key)) {
            Some(known) => unknown.push(format!("{key} (did you mean {known}?)")),
            None => unknown.push(key.to_string()),
        }
    }
    if !unknown.is_empty() {
        return Err(KubeletConfigError::UnknownFields {
            path: path.to_string(),
            fields: unknown.join(", "),
        });
    }
    let string = |field: &'static str| -> Result<Option<&str>, KubeletConfigError> {
        match map.get(field) {
            None | Some(serde_norway::Value::Null) => Ok(None),
            Some(serde_norway::Value::String(text)) => Ok(Some(text)),
            Some(other) => Err(KubeletConfigError::Field {
                path: path.to_string(),
                field,
                problem: format!(
                    "{} is not a string; quote it ({field}: \"...\")",
                    serde_norway::to_string(other)
                        .unwrap_or_default()
                        .trim_end()
                ),
            }),
        }
    };
    match string("kind")? {
        Some("KubeletConfiguration") => {}
        Some(kind) => return Err(not_kubelet(format!("kind is {kind}"))),
        None => return Err(not_kubelet("no kind: KubeletConfiguration".into())),
    }
    match string("apiVersion")? {
        Some("kubelet.config.k8s.io/v1beta1") => {}
        other => {
            return Err(not_kubelet(format!(
                "apiVersion is {}, lowlat reads kubelet.config.k8s.io/v1beta1",
                other.unwrap_or("missing")
            )));
        }
    }
    let reserved_system_cpus = match string("reservedSystemCPUs")? {
        None => None,
        Some(list) if list.trim().is_empty() => None,
        Some(list) => {
            Some(
                CpuSet::parse_list(list.trim()).map_err(|e| KubeletConfigError::Field {
                    path: path.to_string(),
                    field: "reservedSystemCPUs",
                    problem: format!("'{}': {e}", escape_controls(list)),
                })?,
            )
        }
    };
    Ok(KubeletConfig {
        path: path.to_string(),
        cpu_manager_policy: string("cpuManagerPolicy")?.unwrap_or("none").to_string(),
        reserved_system_cpus,
        topology_manager_policy: string("topologyManagerPolicy")?
            .unwrap_or("none")
            .to_string(),
    })
}

/// The kubelet configuration under the reader's root: `None` where there is none (no kubelet),
/// unavailable with the reason where it cannot be read or is refused.
pub fn read(r: &mut Reader) -> Option<Avail<KubeletConfig>> {
    match r.root.read(LIVE_PATH) {
        Err(ReadError::NotFound { .. }) => None,
        Err(e) => Some(Avail::missing(e.to_string())),
        Ok(text) => Some(parse(LIVE_PATH, &text).into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n\
                        cpuManagerPolicy: static\nreservedSystemCPUs: \"0,8\"\n";

    #[test]
    fn reads_the_cpu_manager_and_the_reserved_cpus() {
        let config = parse("k.yaml", GOOD).unwrap();
        assert_eq!(config.cpu_manager_policy, "static");
        assert_eq!(config.reserved_system_cpus.unwrap().to_list(), "0,8");
        assert_eq!(config.topology_manager_policy, "none");
        let config = parse(
            "k.yaml",
            "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n",
        )
        .unwrap();
        assert_eq!(config.cpu_manager_policy, "none");
        assert_eq!(config.reserved_system_cpus, None);
    }

    #[test]
    fn bad_input_names_the_file_and_what_is_wrong() {
        let err = parse("k.yaml", "kind: [unclosed\n")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("k.yaml: not YAML: "), "{err}");
        assert!(err.contains("line"), "{err}");
        let err = parse(
            "k.yaml",
            &format!("{GOOD}reservedSystemCpus: \"0\"\nfoo: 1\n"),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains(
                "unknown field(s) reservedSystemCpus (did you mean reservedSystemCPUs?), foo"
            ),
            "{err}"
        );
        let err = parse("k.yaml", "apiVersion: v1\nkind: Pod\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("kind is Pod"), "{err}");
        let err = parse("k.yaml", "- a\n").unwrap_err().to_string();
        assert!(err.contains("not a mapping"), "{err}");
        let err = parse("k.yaml", &GOOD.replace("\"0,8\"", "0"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("reservedSystemCPUs: 0 is not a string"),
            "{err}"
        );
        let err = parse("k.yaml", &GOOD.replace("0,8", "0-x"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("reservedSystemCPUs: '0-x'"), "{err}");
    }
}

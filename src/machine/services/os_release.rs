//! The operating system release, from `/etc/os-release` (or `/usr/lib/os-release`).

use super::vars::{Var, last, parse_env_file};
use crate::machine::{Avail, Reader, Warnings};
use serde::{Deserialize, Serialize};

/// Where os-release lives, in the order looked up (the second is the vendor's fallback).
pub const PATHS: [&str; 2] = ["/etc/os-release", "/usr/lib/os-release"];

/// The fields of os-release that identify a distribution.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OsRelease {
    /// The file it was read from.
    pub path: String,
    /// `ID`: the distribution, lower case (`rhel`, `ubuntu`, `debian`).
    pub id: Option<String>,
    /// `ID_LIKE`: related distributions (`["fedora"]` for RHEL).
    pub id_like: Vec<String>,
    /// `VERSION_ID`: the release (`8.1`, `22.04`).
    pub version_id: Option<String>,
    /// `PRETTY_NAME`: the release for people (`Red Hat Enterprise Linux 8.1 (Ootpa)`).
    pub pretty_name: Option<String>,
}

/// Reads the first os-release file that exists; unavailable when neither does.
pub fn read(r: &mut Reader) -> Avail<OsRelease> {
    match super::first_file(r, &PATHS) {
        Ok((path, text)) => Avail::Available(parse(&text, path, &mut r.warnings)),
        Err(reason) => Avail::missing(reason.to_string()),
    }
}

/// Parses os-release (shell syntax); garbled lines are warned about.
pub fn parse(text: &str, path: &str, warnings: &mut Warnings) -> OsRelease {
    let vars = parse_env_file(text, path, warnings);
    let get = |key: &str| last(&vars, key).map(|var: &Var| var.value.clone());
    OsRelease {
        path: path.to_string(),
        id: get("ID"),
        id_like: get("ID_LIKE")
            .map(|like| like.split_whitespace().map(str::to_string).collect())
            .unwrap_or_default(),
        version_id: get("VERSION_ID"),
        pretty_name: get("PRETTY_NAME"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sysroot::SysRoot;
    use crate::test_tree::TestTree;

    const RHEL81: &str = "NAME=\"Red Hat Enterprise Linux\"\nVERSION=\"8.1 (Ootpa)\"\nID=\"rhel\"\n\
        ID_LIKE=\"fedora\"\nVERSION_ID=\"8.1\"\nPLATFORM_ID=\"platform:el8\"\n\
        PRETTY_NAME=\"Red Hat Enterprise Linux 8.1 (Ootpa)\"\nANSI_COLOR=\"0;31\"\n";

    #[test]
    fn parses_rhel() {
        let mut warnings = Warnings::default();
        let os = parse(RHEL81, PATHS[0], &mut warnings);
        assert_eq!(os.id.as_deref(), Some("rhel"));
        assert_eq!(os.id_like, vec!["fedora"]);
        assert_eq!(os.version_id.as_deref(), Some("8.1"));
        assert_eq!(
            os.pretty_name.as_deref(),
            Some("Red Hat Enterprise Linux 8.1 (Ootpa)")
        );
        assert!(warnings.into_vec().is_empty());
    }

    #[test]
    fn falls_back_to_usr_lib() {
        let dir = TestTree::with(&[("/usr/lib/os-release", "ID=debian\nVERSION_ID=\"12\"\n")]);
        let root = SysRoot::dir(dir.path());
        let mut r = Reader::new(&root);
        let os = read(&mut r).get_owned().unwrap();
        assert_eq!(os.path, "/usr/lib/os-release");
        assert_eq!(os.id.as_deref(), Some("debian"));
        let empty = TestTree::with(&[]);
        let root = SysRoot::dir(empty.path());
        let mut r = Reader::new(&root);
        assert!(read(&mut r).reason().is_some());
        assert!(r.warnings.into_vec().is_empty());
    }
}

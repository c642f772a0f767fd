//! Configuration files: a whole file lowlat installs (sysctl.d, systemd units and drop-ins,
//! the irqbalance environment, plan.json), or one `KEY=value` line of a shell-style
//! environment file. Files are replaced atomically with their mode and owner kept (new ones
//! get 0644); the journal keeps the whole prior file, or "did not exist" and the directories
//! created for it.

use super::Expansion;
use crate::apply::change::{
    ApplyContext, Change, ChangeError, FollowUp, Inspection, follow_ups_for_file,
};
use crate::apply::journal::{Bytes, PriorFile, Record};
use crate::machine::Warnings;
use crate::machine::services::vars;
use crate::sysroot::{FileKind, Perms, SysRoot};
use crate::tuning::setting_id::SettingId;

/// The mode of files lowlat creates.
pub(crate) const NEW_FILE_MODE: u32 = 0o644;

/// A regular file's content and permissions, `None` when absent; a refusal for anything that
/// is not a regular file (lowlat does not replace links, directories or devices).
pub(crate) fn prior_file(root: &SysRoot, path: &str) -> Result<Option<PriorFile>, ChangeError> {
    let meta = root
        .metadata(path)
        .map_err(|e| ChangeError::Failed(e.to_string()))?;
    let Some(meta) = meta else { return Ok(None) };
    if meta.kind != FileKind::File {
        return Err(ChangeError::Refused(format!(
            "{path} is a {:?}, not a regular file; lowlat only replaces regular files (replace it by hand)",
            meta.kind
        )));
    }
    let content = root
        .read_bytes(path)
        .map_err(|e| ChangeError::Failed(e.to_string()))?;
    Ok(Some(PriorFile {
        content: Bytes::of(&content),
        mode: meta.mode,
        uid: meta.uid,
        gid: meta.gid,
    }))
}

/// The directories that writing `path` would create, outermost first.
fn missing_dirs(root: &SysRoot, path: &str) -> Vec<String> {
    let mut missing = Vec::new();
    let mut dir = std::path::Path::new(path).parent();
    while let Some(d) = dir {
        let name = d.to_string_lossy();
        if name.is_empty() || root.exists(&name) {
            break;
        }
        missing.push(name.into_owned());
        dir = d.parent();
    }
    missing.reverse();
    missing
}

/// Writes `content` to `path`, keeping the mode and owner of the file it replaces.
pub(crate) fn install(root: &SysRoot, path: &str, content: &[u8]) -> Result<(), ChangeError> {
    let perms = match root.metadata(path) {
        Ok(Some(meta)) => Perms {
            mode: meta.mode,
            uid: Some(meta.uid),
            gid: Some(meta.gid),
        },
        _ => Perms::mode(NEW_FILE_MODE),
    };
    if let Some(dir) = std::path::Path::new(path).parent() {
        root.create_dirs(&dir.to_string_lossy())
            .map_err(|e| ChangeError::Failed(e.to_string()))?;
    }
    root.replace_file(path, content, perms)
        .map_err(|e| ChangeError::Failed(e.to_string()))
}

/// The file as it is now, and the journal record that brings it back.
pub(crate) fn current(
    root: &SysRoot,
    path: &str,
) -> Result<(Option<PriorFile>, Record), ChangeError> {
    let prior = prior_file(root, path)?;
    let record = Record::File {
        path: path.to_string(),
        prior: prior.clone(),
        created_dirs: missing_dirs(root, path),
    };
    Ok((prior, record))
}

/// A short description of a file state for messages.
fn describe(prior: Option<&PriorFile>) -> String {
    match prior {
        None => "absent".into(),
        Some(p) => match p.content.to_vec() {
            Some(bytes) => format!("{} bytes, mode {:o}", bytes.len(), p.mode),
            None => format!("mode {:o}", p.mode),
        },
    }
}

/// Installing a whole file.
pub(crate) struct FileChange {
    /// System path.
    pub path: String,
    /// The whole content.
    pub content: Vec<u8>,
}

impl Change for FileChange {
    fn target(&self) -> String {
        self.path.clone()
    }

    fn desired(&self) -> String {
        format!("{} bytes from the plan", self.content.len())
    }

    fn inspect(&self, ctx: &ApplyContext) -> Result<Inspection, ChangeError> {
        let (prior, record) = current(ctx.root, &self.path)?;
        let in_place = prior
            .as_ref()
            .and_then(|p| p.content.to_vec())
            .is_some_and(|bytes| bytes == self.content);
        Ok(Inspection {
            current: describe(prior.as_ref()),
            in_place,
            prior: vec![record],
        })
    }

    fn apply(&self, ctx: &ApplyContext) -> Result<(), ChangeError> {
        install(ctx.root, &self.path, &self.content)
    }

    fn follow_ups(&self, ctx: &ApplyContext) -> Vec<FollowUp> {
        follow_ups_for_file(ctx, &self.path)
    }
}

/// Setting one `KEY=value` assignment in an environment file.
pub(crate) struct FileKeyChange {
    /// System path.
    pub path: String,
    /// The variable.
    pub key: String,
    /// Its desired value.
    pub value: String,
}

impl FileKeyChange {
    fn current_text(&self, root: &SysRoot) -> Result<String, ChangeError> {
        match root.read(&self.path) {
            Ok(text) => Ok(text),
            Err(e) if e.is_not_found() => Ok(String::new()),
            Err(e) => Err(ChangeError::Failed(e.to_string())),
        }
    }

    fn current_value(&self, text: &str) -> Option<String> {
        let vars = vars::parse_env_file(text, &self.path, &mut Warnings::default());
        vars::last(&vars, &self.key).map(|v| v.value.clone())
    }
}

impl Change for FileKeyChange {
    fn target(&self) -> String {
        format!("{} {}", self.path, self.key)
    }

    fn desired(&self) -> String {
        self.value.clone()
    }

    fn inspect(&self, ctx: &ApplyContext) -> Result<Inspection, ChangeError> {
        let (_, record) = current(ctx.root, &self.path)?;
        let text = self.current_text(ctx.root)?;
        let current = self.current_value(&text);
        Ok(Inspection {
            in_place: current.as_deref() == Some(self.value.as_str()),
            current: current.unwrap_or_else(|| "unset".into()),
            prior: vec![record],
        })
    }

    fn apply(&self, ctx: &ApplyContext) -> Result<(), ChangeError> {
        let text = self.current_text(ctx.root)?;
        install(
            ctx.root,
            &self.path,
            set_key(&text, &self.key, &self.value).as_bytes(),
        )
    }

    fn follow_ups(&self, ctx: &ApplyContext) -> Vec<FollowUp> {
        follow_ups_for_file(ctx, &self.path)
    }
}

/// `value` quoted for a shell-style environment file when it needs it.
fn quote(value: &str) -> String {
    let plain = !value.is_empty()
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.,:/+=@%".contains(&b));
    if plain {
        value.to_string()
    } else {
        let escaped: String = value
            .chars()
            .flat_map(|c| match c {
                '"' | '\\' | '$' | '`' => vec!['\\', c],
                _ => vec![c],
            })
            .collect();
        format!("\"{escaped}\"")
    }
}

/// `text` with the last assignment of `key` replaced by `key=value` (other lines untouched),
/// or the assignment appended when there is none.
pub(crate) fn set_key(text: &str, key: &str, value: &str) -> String {
    let line = format!("{key}={}", quote(value));
    let assigns = |l: &str| {
        let l = l.trim_start();
        let l = l.strip_prefix("export ").map_or(l, str::trim_start);
        l.strip_prefix(key)
            .is_some_and(|rest| rest.starts_with('='))
    };
    let mut lines: Vec<&str> = text.lines().collect();
    match lines.iter().rposition(|l| assigns(l)) {
        Some(i) => lines[i] = &line,
        None => lines.push(&line),
    }
    let mut out = lines.join("\n");
    out.push('\n');
    out
}

/// Puts a file back as a journal record found it: the prior content, mode and owner, or
/// removed (with the directories created for it, when empty) if it did not exist. Returns
/// whether anything changed.
pub(crate) fn restore(
    root: &SysRoot,
    path: &str,
    prior: Option<&PriorFile>,
    created_dirs: &[String],
) -> Result<bool, ChangeError> {
    let failed = |e: crate::sysroot::WriteError| ChangeError::Failed(e.to_string());
    // A crash between writing the new content and renaming it over the file left a temporary
    // file beside it (and keeps a directory apply created from being empty).
    let stale = root.remove_stale_temporaries(path).map_err(failed)?;
    let now = root
        .metadata(path)
        .map_err(|e| ChangeError::Failed(e.to_string()))?;
    let changed = match prior {
        None => {
            let removed = match now {
                Some(meta) if meta.kind != FileKind::Dir => {
                    root.remove_file(path).map_err(failed)?
                }
                _ => false,
            };
            let mut dirs_removed = false;
            for dir in created_dirs.iter().rev() {
                dirs_removed |= root.remove_empty_dir(dir).map_err(failed)?;
            }
            removed || dirs_removed || stale > 0
        }
        Some(prior) => {
            let content = prior.content.to_vec().ok_or_else(|| {
                ChangeError::Failed(format!("{path}: the journal's prior content is garbled"))
            })?;
            let same = now.is_some_and(|m| {
                m.kind == FileKind::File
                    && (m.mode, m.uid, m.gid) == (prior.mode, prior.uid, prior.gid)
            }) && root.read_bytes(path).is_ok_and(|bytes| bytes == content);
            if !same {
                if let Some(dir) = std::path::Path::new(path).parent() {
                    root.create_dirs(&dir.to_string_lossy()).map_err(failed)?;
                }
                let perms = Perms {
                    mode: prior.mode,
                    uid: Some(prior.uid),
                    gid: Some(prior.gid),
                };
                root.replace_file(path, &content, perms).map_err(failed)?;
            }
            !same || stale > 0
        }
    };
    Ok(changed)
}

/// The file changes of a `file:` target; `None` for other targets.
pub(crate) fn expand(target: &SettingId, value: &str) -> Option<Expansion> {
    Some(match target {
        SettingId::File(path) => Expansion::Changes(vec![Box::new(FileChange {
            path: path.clone(),
            content: value.as_bytes().to_vec(),
        })]),
        SettingId::FileKey { path, key } => {
            if value.contains('\n') {
                return Some(Expansion::Invalid(format!(
                    "the value of {key} must be one line"
                )));
            }
            Expansion::Changes(vec![Box::new(FileKeyChange {
                path: path.clone(),
                key: key.clone(),
                value: value.to_string(),
            })])
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_the_last_assignment_or_appends() {
        let text =
            "# comment\nIRQBALANCE_BANNED_CPULIST=1\nOTHER=x\nexport IRQBALANCE_BANNED_CPULIST=2\n";
        assert_eq!(
            set_key(text, "IRQBALANCE_BANNED_CPULIST", "1-7,9-15"),
            "# comment\nIRQBALANCE_BANNED_CPULIST=1\nOTHER=x\nIRQBALANCE_BANNED_CPULIST=1-7,9-15\n"
        );
        assert_eq!(set_key("A=1", "B", "two words"), "A=1\nB=\"two words\"\n");
        assert_eq!(set_key("", "B", "$x"), "B=\"\\$x\"\n");
        // The result reads back as the value set.
        let out = set_key("X=1\n", "ARGS", "--banirq=5 \"q\"");
        let vars = vars::parse_env_file(&out, "f", &mut Warnings::default());
        assert_eq!(vars::last(&vars, "ARGS").unwrap().value, "--banirq=5 \"q\"");
    }

    #[test]
    fn restore_puts_back_content_mode_and_removes_created_files() {
        let dir = tempfile::tempdir().unwrap();
        let root = SysRoot::dir(dir.path());
        root.create_dirs("/etc").unwrap();
        root.replace_file("/etc/a", b"old\n", Perms::mode(0o600))
            .unwrap();
        let prior = prior_file(&root, "/etc/a").unwrap();
        install(&root, "/etc/a", b"new\n").unwrap();
        assert_eq!(root.metadata("/etc/a").unwrap().unwrap().mode, 0o600);
        assert!(restore(&root, "/etc/a", prior.as_ref(), &[]).unwrap());
        assert_eq!(root.read("/etc/a").unwrap(), "old\n");
        assert!(!restore(&root, "/etc/a", prior.as_ref(), &[]).unwrap());

        let created = missing_dirs(&root, "/etc/lowlat/x/plan.json");
        assert_eq!(created, ["/etc/lowlat", "/etc/lowlat/x"]);
        install(&root, "/etc/lowlat/x/plan.json", b"{}").unwrap();
        assert!(restore(&root, "/etc/lowlat/x/plan.json", None, &created).unwrap());
        assert_eq!(root.list("/etc").unwrap(), vec!["a"]);
    }

    #[test]
    fn links_are_refused_not_replaced() {
        let dir = crate::test_tree::TestTree::empty();
        dir.link("/link", "/dev/null");
        let root = dir.root();
        assert!(matches!(
            prior_file(&root, "/link"),
            Err(ChangeError::Refused(_))
        ));
    }
}

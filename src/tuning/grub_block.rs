//! The GRUB defaults block: POSIX shell, sourced by `grub-mkconfig` after `/etc/default/grub`,
//! that drops the kernel arguments whose keys lowlat owns from `GRUB_CMDLINE_LINUX` and
//! `GRUB_CMDLINE_LINUX_DEFAULT` and appends the plan's. The plan renders it as a drop-in and
//! apply installs the very same text, so the two cannot differ.

use crate::tuning::kernel_args::AllArgs;

/// GRUB's defaults file.
pub(crate) const DEFAULTS_PATH: &str = crate::machine::kernel::boot_loader::GRUB_DEFAULTS;
/// The drop-in directory of Debian and Ubuntu.
pub(crate) const DROPIN_DIR: &str = "/etc/default/grub.d";
/// lowlat's drop-in (sorted last).
pub(crate) const DROPIN_PATH: &str = "/etc/default/grub.d/99-lowlat.cfg";

const BEGIN: &str = "# BEGIN lowlat kernel arguments";
const END: &str = "# END lowlat kernel arguments";
const ARGS_LINE: &str = "GRUB_CMDLINE_LINUX=\"$(lowlat_drop \"$GRUB_CMDLINE_LINUX\")";
const CASE_INDENT: &str = "            ";

/// Who writes the block `lowlat apply` installs in /etc/default/grub, and how it goes.
pub(crate) const BY_APPLY: &str = "written by `lowlat apply`; `lowlat revert` removes it";

/// The block for `args`; `written_by` says who wrote it and how to undo it ([`BY_APPLY`]).
pub(crate) fn render_block(args: &AllArgs, written_by: &str) -> String {
    // Both spellings of each key: the kernel treats `-` and `_` alike.
    let mut patterns: Vec<String> = Vec::new();
    for key in &args.keys {
        patterns.push(key.clone());
        let dashed = key.replace('_', "-");
        if dashed != *key {
            patterns.push(dashed);
        }
    }
    let appended: String = args.tokens.iter().map(|t| format!(" {t}")).collect();
    format!(
        "{BEGIN} ({written_by}).\n\
         # Drops every argument with a key lowlat owns, then appends the plan's.\n\
         lowlat_drop() {{\n\
         \x20   lowlat_out=\n\
         \x20   set -f\n\
         \x20   for lowlat_arg in $1; do\n\
         \x20       case \"${{lowlat_arg%%=*}}\" in\n\
         {CASE_INDENT}{patterns}) ;;\n\
         \x20           *) lowlat_out=\"${{lowlat_out:+$lowlat_out }}$lowlat_arg\" ;;\n\
         \x20       esac\n\
         \x20   done\n\
         \x20   set +f\n\
         \x20   printf '%s' \"$lowlat_out\"\n\
         }}\n\
         GRUB_CMDLINE_LINUX_DEFAULT=\"$(lowlat_drop \"$GRUB_CMDLINE_LINUX_DEFAULT\")\"\n\
         {ARGS_LINE}{appended}\"\n\
         unset -f lowlat_drop\n\
         unset lowlat_out lowlat_arg\n\
         {END}\n",
        patterns = patterns.join("|"),
    )
}

/// Splits lowlat's block off `text`: the text without it, and the block.
pub(crate) fn split_block(text: &str) -> (String, Option<String>) {
    let Some(start) = text.find(BEGIN) else {
        return (text.to_string(), None);
    };
    let end = text[start..]
        .find(END)
        .map_or(text.len(), |e| start + e + END.len());
    let end = if text[end..].starts_with('\n') {
        end + 1
    } else {
        end
    };
    let mut rest = text[..start].to_string();
    rest.push_str(&text[end..]);
    (rest, Some(text[start..end].to_string()))
}

/// Whether `path` is a GRUB defaults file (changing it needs a regeneration).
pub(crate) fn is_grub_defaults(path: &str) -> bool {
    path == DEFAULTS_PATH || path.starts_with(&format!("{DROPIN_DIR}/"))
}

/// The arguments a block appends.
pub(crate) fn block_args(block: &str) -> Option<&str> {
    block
        .lines()
        .find_map(|l| l.strip_prefix(ARGS_LINE))
        .map(|rest| rest.trim_end_matches('"').trim())
}

/// The argument keys a block drops (both spellings of each).
pub(crate) fn dropped_keys(block: &str) -> Vec<&str> {
    block
        .lines()
        .find_map(|l| l.strip_prefix(CASE_INDENT))
        .and_then(|l| l.strip_suffix(") ;;"))
        .map(|l| l.split('|').collect())
        .unwrap_or_default()
}

//! The kernel command line (`/proc/cmdline`), split into parameters the way the kernel splits
//! it, and the CPU lists of the isolation parameters (`isolcpus=`, `nohz_full=`, `rcu_nocbs=`,
//! `irqaffinity=`).
//!
//! Splitting follows the kernel's `next_arg()`: parameters are separated by whitespace outside
//! double quotes; a quote may open the whole parameter (`"foo=a b"`) or the value
//! (`foo="a b"`), and the quotes around a value are dropped; the first `=` separates key and
//! value; a bare `--` ends the kernel's parameters and everything after it is handed to init.
//! Keys compare like the kernel compares them: `-` and `_` are the same character.

use serde::{Deserialize, Serialize};

use crate::machine::CpuSet;
use crate::machine::cpulist::CpuSetError;

/// One kernel parameter: `key=value` or a bare flag.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Param {
    /// The key as written, e.g. `nohz_full` or `rcutree.kthread_prio` (module parameters keep
    /// their `module.` prefix).
    pub key: String,
    /// The value with surrounding double quotes removed; `None` for a bare flag (`quiet`).
    /// An empty value (`foo=`) is `Some("")`.
    pub value: Option<String>,
}

impl Param {
    /// Whether this parameter has `key`, comparing `-` and `_` as equal like the kernel does.
    pub fn is(&self, key: &str) -> bool {
        keys_equal(&self.key, key)
    }

    /// The module part of a dotted key (`rcutree` of `rcutree.kthread_prio`), if any.
    pub fn module(&self) -> Option<&str> {
        self.key.split_once('.').map(|(module, _)| module)
    }
}

/// The kernel command line, parsed.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Cmdline {
    /// The text as read, without the trailing newline.
    pub raw: String,
    /// The kernel's parameters, in order, repeated keys kept.
    pub params: Vec<Param>,
    /// The arguments after a bare `--`, handed to init (`key=value` or a word each).
    pub init_args: Vec<String>,
}

impl Cmdline {
    /// Every occurrence of `key`, in command-line order.
    pub fn all<'a>(&'a self, key: &'a str) -> impl Iterator<Item = &'a Param> + 'a {
        self.params.iter().filter(move |p| p.is(key))
    }

    /// The last occurrence of `key` (the one most kernel parameters honour).
    pub fn last(&self, key: &str) -> Option<&Param> {
        self.params.iter().rev().find(|p| p.is(key))
    }

    /// Whether `key` appears at all, with or without a value.
    pub fn has(&self, key: &str) -> bool {
        self.last(key).is_some()
    }

    /// The value of the last occurrence of `key`; `None` when absent or a bare flag.
    pub fn value(&self, key: &str) -> Option<&str> {
        self.last(key).and_then(|p| p.value.as_deref())
    }
}

/// Compares parameter keys like the kernel's `parameq()`: `-` and `_` are interchangeable.
fn keys_equal(a: &str, b: &str) -> bool {
    let norm = |c: u8| if c == b'-' { b'_' } else { c };
    a.len() == b.len() && a.bytes().zip(b.bytes()).all(|(x, y)| norm(x) == norm(y))
}

/// Parses a kernel command line. Never fails: every input splits into some parameters, as it
/// does in the kernel (an unterminated quote runs to the end of the line).
pub fn parse_cmdline(text: &str) -> Cmdline {
    let raw = text.trim_end_matches(['\n', '\0']).to_string();
    let mut cmdline = Cmdline {
        raw: raw.clone(),
        ..Cmdline::default()
    };
    let mut rest = raw.trim_start_matches(is_space);
    let mut after_dashes = false;
    while !rest.is_empty() {
        let (param, next) = next_arg(rest);
        rest = next;
        if after_dashes {
            cmdline.init_args.push(match param.value {
                Some(value) => format!("{}={value}", param.key),
                None => param.key,
            });
        } else if param.value.is_none() && param.key == "--" {
            after_dashes = true;
        } else {
            cmdline.params.push(param);
        }
    }
    cmdline
}

/// Whitespace as the kernel's `isspace()` sees it in ASCII.
fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\x0b' | '\x0c' | '\r')
}

/// Splits one parameter off the front of `args` (which starts with a non-space), returning it
/// and the rest with leading spaces skipped. Mirrors the kernel's `next_arg()`.
fn next_arg(args: &str) -> (Param, &str) {
    let (args, quoted) = match args.strip_prefix('"') {
        Some(inner) => (inner, true),
        None => (args, false),
    };
    let mut in_quote = quoted;
    let mut equals = 0;
    let mut end = args.len();
    for (i, c) in args.char_indices() {
        if is_space(c) && !in_quote {
            end = i;
            break;
        }
        // The kernel records the first '=' at an index above 0 (a leading '=' is part of the
        // key, exactly as `equals == 0` means "not found" there).
        if equals == 0 && c == '=' {
            equals = i;
        }
        if c == '"' {
            in_quote = !in_quote;
        }
    }
    let token = args.get(..end).unwrap_or(args);
    let rest = args.get(end..).unwrap_or("").trim_start_matches(is_space);
    // A closing quote at the end of the token is dropped when the token or its value opened one.
    let param = if equals == 0 {
        let key = match token.strip_suffix('"') {
            Some(stripped) if quoted => stripped,
            _ => token,
        };
        Param {
            key: key.to_string(),
            value: None,
        }
    } else {
        let key = token.get(..equals).unwrap_or("");
        let value = token.get(equals + 1..).unwrap_or("");
        let (value, value_quoted) = match value.strip_prefix('"') {
            Some(inner) => (inner, true),
            None => (value, false),
        };
        let value = match value.strip_suffix('"') {
            Some(stripped) if value_quoted || quoted => stripped,
            _ => value,
        };
        Param {
            key: key.to_string(),
            value: Some(value.to_string()),
        }
    };
    (param, rest)
}

/// `isolcpus=` parsed: its flags and CPU list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Isolcpus {
    /// The isolated CPUs.
    pub cpus: CpuSet,
    /// `domain`: the CPUs are removed from the scheduler's load-balancing domains (the
    /// default when no flag is given).
    pub domain: bool,
    /// `nohz`: the scheduler tick is stopped on them where possible (as with `nohz_full=`).
    pub nohz: bool,
    /// `managed_irq`: managed interrupts avoid them where the affinity mask allows.
    pub managed_irq: bool,
    /// Flags the kernel does not know and skips (it logs "Skipped unknown flag").
    pub unknown_flags: Vec<String>,
}

/// The flags written in the value of one `isolcpus=` (`managed_irq`, `domain` of
/// `managed_irq,domain,1-7`) and the rest, the CPU list: the leading alphabetic words followed
/// by a comma are flags, as the kernel's housekeeping code reads them; none where only CPUs
/// are written.
pub(crate) fn isolcpus_flags(value: &str) -> (Vec<&str>, &str) {
    let mut flags = Vec::new();
    let mut rest = value.trim();
    while rest.starts_with(|c: char| c.is_ascii_alphabetic()) {
        let Some((flag, after)) = rest.split_once(',') else {
            // A word without a following comma is the CPU list itself (`all`) or garbage;
            // the list parser decides.
            break;
        };
        if flag.contains(|c: char| c.is_ascii_digit()) {
            break;
        }
        flags.push(flag);
        rest = after;
    }
    (flags, rest)
}

/// Parses the value of `isolcpus=` the way the kernel's housekeeping code does: leading
/// alphabetic words followed by a comma are flags (`nohz`, `domain`, `managed_irq`; unknown
/// ones are skipped), the rest is a CPU list; no flag means `domain`. `possible` resolves
/// `all` and `N` (see [`parse_boot_cpulist`]).
pub fn parse_isolcpus(
    value: &str,
    possible: Option<&CpuSet>,
) -> Result<Isolcpus, BootCpuListError> {
    let mut isolcpus = Isolcpus {
        cpus: CpuSet::new(),
        domain: false,
        nohz: false,
        managed_irq: false,
        unknown_flags: Vec::new(),
    };
    let (flags, rest) = isolcpus_flags(value);
    for flag in flags {
        match flag {
            "nohz" => isolcpus.nohz = true,
            "domain" => isolcpus.domain = true,
            "managed_irq" => isolcpus.managed_irq = true,
            other => isolcpus.unknown_flags.push(other.to_string()),
        }
    }
    if !(isolcpus.nohz || isolcpus.domain || isolcpus.managed_irq) {
        isolcpus.domain = true;
    }
    isolcpus.cpus = parse_boot_cpulist(rest, possible)?;
    Ok(isolcpus)
}

/// Why a CPU list of the kernel command line could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BootCpuListError {
    /// Not a CPU list.
    #[error(transparent)]
    List(#[from] CpuSetError),
    /// `all` or `N` (the text given), with no possible CPU set to resolve it.
    #[error(
        "'{0}' refers to all possible CPUs, but /sys/devices/system/cpu/possible is unreadable"
    )]
    NoPossible(String),
    /// `N` (in the text given), with an empty possible CPU set.
    #[error("'{0}' uses N, but the possible CPU set is empty")]
    EmptyPossible(String),
}

/// Parses a CPU list given on the command line. Besides the sysfs list form it accepts what
/// the kernel's `bitmap_parselist()` accepts since Linux 5.13: `all` (every possible CPU) and
/// `N` (the last possible CPU, as in `1-N`); both need `possible`.
pub fn parse_boot_cpulist(
    text: &str,
    possible: Option<&CpuSet>,
) -> Result<CpuSet, BootCpuListError> {
    let text = text.trim();
    let needs_possible = text == "all" || text.contains('N');
    if !needs_possible {
        return Ok(CpuSet::parse_list(text)?);
    }
    let Some(possible) = possible else {
        return Err(BootCpuListError::NoPossible(text.to_string()));
    };
    if text == "all" {
        return Ok(possible.clone());
    }
    let last = possible
        .iter()
        .next_back()
        .ok_or_else(|| BootCpuListError::EmptyPossible(text.to_string()))?;
    let last = last.to_string();
    let expanded: Vec<String> = text
        .split(',')
        .map(|token| {
            let (range, stride) = match token.split_once(':') {
                Some((range, stride)) => (range, Some(stride)),
                None => (token, None),
            };
            let range: Vec<&str> = range
                .split('-')
                .map(|end| {
                    if end.trim() == "N" {
                        last.as_str()
                    } else {
                        end
                    }
                })
                .collect();
            match stride {
                Some(stride) => format!("{}:{stride}", range.join("-")),
                None => range.join("-"),
            }
        })
        .collect();
    Ok(CpuSet::parse_list(&expanded.join(","))?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn pairs(cmdline: &Cmdline) -> Vec<(&str, Option<&str>)> {
        cmdline
            .params
            .iter()
            .map(|p| (p.key.as_str(), p.value.as_deref()))
            .collect()
    }

    #[test]
    fn splits_the_tuned_hpe_cmdline() {
        // [S000] §4.3.5, after the guide (spaces restored).
        let text = "BOOT_IMAGE=(hd1,gpt2)/vmlinuz-4.18.0-147.5.1.el8_1.x86_64 \
            root=/dev/mapper/rhel-root ro crashkernel=auto rd.lvm.lv=rhel/root quiet \
            selinux=0 mce=ignore_ce nmi_watchdog=0 hugepagesz=2MB hugepages=6000 \
            transparent_hugepage=never tsc=reliable cpuidle.off=1 rcu_nocb_poll idle=poll \
            processor.max_cstate=0 nohz=on nohz_full=1-7,9-15 rcu_nocbs=1-7,9-15 \
            tuned.non_isolcpus=00000101 intel_pstate=disable nosoftlockup\n";
        let cmdline = parse_cmdline(text);
        assert!(!cmdline.raw.ends_with('\n'));
        assert_eq!(cmdline.params.len(), 23);
        assert_eq!(
            cmdline.value("BOOT_IMAGE"),
            Some("(hd1,gpt2)/vmlinuz-4.18.0-147.5.1.el8_1.x86_64")
        );
        assert_eq!(cmdline.value("nohz_full"), Some("1-7,9-15"));
        assert_eq!(cmdline.value("rd.lvm.lv"), Some("rhel/root"));
        assert!(cmdline.has("rcu_nocb_poll"));
        assert_eq!(cmdline.value("rcu_nocb_poll"), None);
        let cpuidle = cmdline.last("cpuidle.off").unwrap();
        assert_eq!(cpuidle.module(), Some("cpuidle"));
        assert_eq!(cpuidle.value.as_deref(), Some("1"));
        assert!(cmdline.init_args.is_empty());
    }

    #[test]
    fn quotes_like_the_kernel() {
        let cmdline = parse_cmdline(r#"foo="a b" "bar=c d" dyndbg="file x.c +p" e="" f=x"y"#);
        assert_eq!(
            pairs(&cmdline),
            vec![
                ("foo", Some("a b")),
                ("bar", Some("c d")),
                ("dyndbg", Some("file x.c +p")),
                ("e", Some("")),
                // A quote that does not open the value stays, as in the kernel.
                ("f", Some("x\"y")),
            ]
        );
        // An unterminated quote runs to the end of the line.
        let cmdline = parse_cmdline(r#"a=1 b="x y z"#);
        assert_eq!(
            pairs(&cmdline),
            vec![("a", Some("1")), ("b", Some("x y z"))]
        );
    }

    #[test]
    fn keeps_repeated_keys_in_order() {
        let cmdline = parse_cmdline(
            "console=tty0 console=ttyS0,115200 hugepagesz=1G hugepages=4 hugepagesz=2M hugepages=512",
        );
        let consoles: Vec<_> = cmdline.all("console").map(|p| p.value.as_deref()).collect();
        assert_eq!(consoles, vec![Some("tty0"), Some("ttyS0,115200")]);
        assert_eq!(cmdline.value("console"), Some("ttyS0,115200"));
        assert_eq!(cmdline.all("hugepages").count(), 2);
        assert_eq!(cmdline.value("hugepages"), Some("512"));
    }

    #[test]
    fn dashes_and_underscores_are_the_same_key() {
        let cmdline = parse_cmdline("nohz-full=2-3 rcutree.kthread_prio=11");
        assert_eq!(cmdline.value("nohz_full"), Some("2-3"));
        assert_eq!(cmdline.value("rcutree.kthread-prio"), Some("11"));
        assert!(!cmdline.has("nohz"));
    }

    #[test]
    fn arguments_after_dashes_go_to_init() {
        let cmdline = parse_cmdline("ro quiet -- single foo=bar -- x");
        assert_eq!(pairs(&cmdline), vec![("ro", None), ("quiet", None)]);
        assert_eq!(cmdline.init_args, vec!["single", "foo=bar", "--", "x"]);
        // `--` glued to other text is an ordinary parameter.
        let cmdline = parse_cmdline("--x a=--");
        assert_eq!(pairs(&cmdline), vec![("--x", None), ("a", Some("--"))]);
    }

    #[test]
    fn whitespace_of_any_kind_separates() {
        let cmdline = parse_cmdline("  a=1\t\tb \n");
        assert_eq!(pairs(&cmdline), vec![("a", Some("1")), ("b", None)]);
        assert!(parse_cmdline("").params.is_empty());
        assert!(parse_cmdline(" \n").params.is_empty());
    }

    #[test]
    fn isolcpus_flags() {
        let iso = parse_isolcpus("managed_irq,domain,2-3", None).unwrap();
        assert!(iso.managed_irq && iso.domain && !iso.nohz);
        assert_eq!(iso.cpus.to_list(), "2-3");

        let iso = parse_isolcpus("nohz,domain,1-7", None).unwrap();
        assert!(iso.nohz && iso.domain && !iso.managed_irq);
        assert_eq!(iso.cpus.to_list(), "1-7");

        // No flag means domain isolation ([S002]).
        let iso = parse_isolcpus("4-7", None).unwrap();
        assert!(iso.domain && !iso.nohz && !iso.managed_irq);

        // Only managed_irq: domain is not implied.
        let iso = parse_isolcpus("managed_irq,3", None).unwrap();
        assert!(iso.managed_irq && !iso.domain);

        let iso = parse_isolcpus("nohz,bogus,5", None).unwrap();
        assert_eq!(iso.unknown_flags, vec!["bogus"]);
        assert_eq!(iso.cpus.to_list(), "5");

        assert!(parse_isolcpus("domain,x-y", None).is_err());
        assert!(parse_isolcpus("nohz", None).is_err());
    }

    #[test]
    fn boot_cpulists_accept_all_and_n() {
        let possible = CpuSet::parse_list("0-15").unwrap();
        assert_eq!(
            parse_boot_cpulist("all", Some(&possible))
                .unwrap()
                .to_list(),
            "0-15"
        );
        assert_eq!(
            parse_boot_cpulist("1-N", Some(&possible))
                .unwrap()
                .to_list(),
            "1-15"
        );
        assert_eq!(
            parse_boot_cpulist("0,N", Some(&possible))
                .unwrap()
                .to_list(),
            "0,15"
        );
        assert_eq!(
            parse_boot_cpulist("1,2,3,4,5,6,7,9,10,11,12,13,14,15", None)
                .unwrap()
                .to_list(),
            "1-7,9-15"
        );
        assert!(parse_boot_cpulist("all", None).is_err());
        assert!(parse_boot_cpulist("1-N", Some(&CpuSet::new())).is_err());
        assert_eq!(
            parse_isolcpus("nohz,domain,all", Some(&possible))
                .unwrap()
                .cpus
                .to_list(),
            "0-15"
        );
    }

    proptest! {
        #[test]
        fn parsing_never_panics_and_keeps_every_word(text in "[ a-z=\"\\-._,0-9\t]{0,60}") {
            let cmdline = parse_cmdline(&text);
            if !text.contains('"') {
                // Without quotes every parameter is one whitespace-separated word.
                let words = text.split_ascii_whitespace().count();
                prop_assert!(cmdline.params.iter().all(|p| !p.key.is_empty()));
                prop_assert_eq!(cmdline.params.len() + cmdline.init_args.len() + usize::from(text.split_ascii_whitespace().any(|w| w == "--")), words);
            }
            let _ = parse_isolcpus(&text, None);
            let _ = parse_boot_cpulist(&text, Some(&CpuSet::parse_list("0-3").unwrap()));
        }

        #[test]
        fn unquoted_words_round_trip(words in proptest::collection::vec("[a-z_.]{1,8}(=[a-z0-9,-]{0,6})?", 0..10)) {
            let cmdline = parse_cmdline(&words.join(" "));
            let back: Vec<String> = cmdline.params.iter().map(|p| match &p.value {
                Some(v) => format!("{}={v}", p.key),
                None => p.key.clone(),
            }).collect();
            prop_assert_eq!(back, words);
        }

        #[test]
        fn any_unicode_never_panics(text in "\\PC{0,40}") {
            let _ = parse_cmdline(&text);
        }
    }
}

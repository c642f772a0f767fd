//! Command lines that boot: the CPU-list syntax the kernel accepts on its command line, and
//! whether the command line after the plan's reboot fits the architecture's
//! `COMMAND_LINE_SIZE`. The kernel copies at most `COMMAND_LINE_SIZE - 1` bytes of the line the
//! boot loader hands it (the last byte is the final NUL) and drops the rest without a word, so
//! an overlong line loses the arguments at its end, on a machine with thousands of CPUs in the
//! middle of a CPU list.

use crate::machine::Machine;
use crate::machine::cpu::CpuIdentity;
use crate::machine::cpulist::ListSyntax;
use crate::machine::kernel::Kernel;
use crate::machine::kernel::cmdline::{Cmdline, parse_cmdline};
use crate::tuning::kernel_args::{Args, normal_key};
use crate::tuning::setting::{Layer, Setting};

/// The first kernel version whose `bitmap_parselist()` accepts the group form
/// `first-last:used/group_size` in the CPU lists of `isolcpus=`, `nohz_full=`, `rcu_nocbs=` and
/// `irqaffinity=` (all parsed by `cpulist_parse()`): Linux 4.9, commit 2d13e6ca429c
/// ("lib/bitmap.c: enhance bitmap syntax"), documented in
/// Documentation/admin-guide/kernel-parameters.rst, "cpu lists".
pub(crate) const GROUPS_SINCE: (u32, u32) = (4, 9);

/// The CPU-list syntax to write on the command line of `kernel`: the group form where its
/// version accepts it, the range form where it does not or where the version is unknown. The
/// plan is for the next boot, which is assumed to run the same kernel.
pub(crate) fn list_syntax(kernel: &Kernel) -> ListSyntax {
    match kernel.version() {
        Some(version) if version >= GROUPS_SINCE => ListSyntax::Groups,
        _ => ListSyntax::Ranges,
    }
}

/// The limit of one architecture's kernel command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LineLimit {
    /// The architecture, as named in messages (`x86`, `arm64`; `these` when not known).
    pub arch: &'static str,
    /// `COMMAND_LINE_SIZE`, bytes, the final NUL included.
    pub size: usize,
    /// Where the value comes from, or that it is assumed.
    pub source: &'static str,
}

impl LineLimit {
    /// The longest command line the kernel keeps whole, in bytes (`size - 1`).
    pub(crate) fn max_len(&self) -> usize {
        self.size - 1
    }
}

/// x86 (32- and 64-bit): arch/x86/include/asm/setup.h.
const X86: LineLimit = LineLimit {
    arch: "x86",
    size: 2048,
    source: "arch/x86/include/asm/setup.h",
};

/// arm64: arch/arm64/include/uapi/asm/setup.h.
const ARM64: LineLimit = LineLimit {
    arch: "arm64",
    size: 2048,
    source: "arch/arm64/include/uapi/asm/setup.h",
};

/// Any other architecture: the value of x86 and arm64 is assumed.
const ASSUMED: LineLimit = LineLimit {
    arch: "these",
    size: 2048,
    source: "assumed: the architecture is not known from /proc/cpuinfo",
};

/// The command-line limit of the machine's architecture, told by /proc/cpuinfo: x86 by its
/// `vendor_id`, arm64 by its `CPU implementer` (a hexadecimal code; lowlat plans servers and
/// takes an ARM CPU for arm64, whose limit is the larger one).
pub(crate) fn line_limit(cpu: Option<&CpuIdentity>) -> LineLimit {
    match cpu.and_then(|c| c.vendor.as_deref()) {
        Some("GenuineIntel" | "AuthenticAMD" | "HygonGenuine" | "CentaurHauls") => X86,
        Some(vendor) if vendor.starts_with("0x") => ARM64,
        _ => ASSUMED,
    }
}

/// The length of the command line after the plan's reboot, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LineLength {
    /// What stays of the current command line: every parameter whose key no boot setting
    /// owns, and the arguments for init after `--`.
    pub kept: usize,
    /// What the plan adds: its arguments and the spaces before them.
    pub added: usize,
}

impl LineLength {
    /// The whole line.
    pub(crate) fn total(&self) -> usize {
        self.kept + self.added
    }
}

/// The length of the command line after the reboot: the current one (when known) without the
/// parameters the boot settings own, then the planned arguments, separated by single spaces.
pub(crate) fn planned_length(current: Option<&Cmdline>, settings: &[Setting]) -> LineLength {
    let args: Vec<Args> = settings
        .iter()
        .filter(|s| s.layer == Layer::Boot)
        .filter_map(|s| Args::of(s).ok())
        .collect();
    let mut tokens: Vec<usize> = Vec::new();
    if let Some(current) = current {
        let owned = |key: &str| args.iter().any(|a| a.keys.contains(&normal_key(key)));
        for param in parse_cmdline(&current.raw).params {
            if owned(&param.key) {
                continue;
            }
            tokens.push(match &param.value {
                // A value with a space keeps its quotes.
                Some(v) if v.contains(char::is_whitespace) => param.key.len() + v.len() + 3,
                Some(v) => param.key.len() + 1 + v.len(),
                None => param.key.len(),
            });
        }
        if !current.init_args.is_empty() {
            tokens.push(2);
            tokens.extend(current.init_args.iter().map(String::len));
        }
    }
    let kept = tokens.iter().sum::<usize>() + tokens.len().saturating_sub(1);
    let planned: Vec<usize> = args
        .iter()
        .flat_map(|a| a.tokens.iter().map(String::len))
        .collect();
    let separators = if tokens.is_empty() {
        planned.len().saturating_sub(1)
    } else {
        planned.len()
    };
    LineLength {
        kept,
        added: planned.iter().sum::<usize>() + separators,
    }
}

/// Why a plan's command line cannot boot as planned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the kernel command line after this plan would be {} bytes ({} kept from /proc/cmdline, {} planned), \
     but {} kernels keep at most {} (COMMAND_LINE_SIZE {}, {}, with the final NUL) and silently cut the rest; \
     choose a partition with shorter CPU lists (--housekeeping-cores N keeps them regular), or remove \
     arguments from the current command line",
    length.total(), length.kept, length.added, limit.arch, limit.max_len(), limit.size, limit.source
)]
pub struct TooLong {
    /// The planned line's length.
    length: LineLength,
    /// The architecture's limit.
    limit: LineLimit,
}

/// Refuses a plan whose command line after the reboot is longer than the kernel keeps.
pub(crate) fn check(machine: &Machine, settings: &[Setting]) -> Result<(), TooLong> {
    let limit = line_limit(machine.cpu.get());
    let length = planned_length(machine.kernel.cmdline.get(), settings);
    if length.total() > limit.max_len() {
        Err(TooLong { length, limit })
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::setting;
    use crate::tuning::setting_id::SettingId;

    fn boot(key: &str, value: &str) -> Setting {
        setting(
            SettingId::Cmdline(key.to_string()),
            value,
            Layer::Boot,
            "",
            "",
        )
    }

    #[test]
    fn owned_parameters_are_replaced_and_the_rest_kept() {
        let current = parse_cmdline("BOOT_IMAGE=/vmlinuz ro nohz_full=1-3 quiet -- single");
        let settings = [
            boot("nohz_full", "nohz_full=1-7"),
            boot("skew_tick", "skew_tick=1"),
            boot("quiet", ""),
        ];
        let length = planned_length(Some(&current), &settings);
        // "BOOT_IMAGE=/vmlinuz ro -- single" + " nohz_full=1-7 skew_tick=1"
        assert_eq!(length.kept, "BOOT_IMAGE=/vmlinuz ro -- single".len());
        assert_eq!(length.added, " nohz_full=1-7 skew_tick=1".len());
        let alone = planned_length(None, &settings);
        assert_eq!(alone.total(), "nohz_full=1-7 skew_tick=1".len());
    }

    #[test]
    fn the_architecture_comes_from_cpuinfo() {
        let cpu = |vendor: &str| CpuIdentity {
            vendor: Some(vendor.to_string()),
            ..CpuIdentity::default()
        };
        assert_eq!(line_limit(Some(&cpu("AuthenticAMD"))).arch, "x86");
        assert_eq!(line_limit(Some(&cpu("0x41"))).arch, "arm64");
        assert_eq!(line_limit(None).max_len(), 2047);
    }

    #[test]
    fn an_overlong_line_is_refused_with_its_figures() {
        let err = TooLong {
            length: LineLength {
                kept: 100,
                added: 2000,
            },
            limit: X86,
        }
        .to_string();
        assert!(err.contains("2100 bytes"), "{err}");
        assert!(err.contains("x86 kernels keep at most 2047"), "{err}");
        assert!(err.contains("--housekeeping-cores"), "{err}");
    }
}

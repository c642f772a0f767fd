//! CPU sets, and the two text forms the kernel uses for them.
//!
//! * the list form (`0-3,8-11`), written by `*_list` files and `isolcpus=`;
//! * the mask form (`ff,ffffffff`), hexadecimal in 32-bit groups separated by commas,
//!   most significant group first, written by `smp_affinity`, `cpumask` files and friends.
//!
//! Both parsers accept what real kernels write (trailing newlines and NUL bytes, leading zero
//! groups, stride lists such as `0-15:2/4` in the list form) and reject everything else with a
//! message that says what was wrong.

use serde::{Deserialize, Serialize, Serializer};
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

/// A set of logical CPU numbers, ordered. Serialized as the kernel's list form (`"0-3,8"`).
///
/// Stored as a bitmap of 64-bit words without trailing zero words, so equal sets are equal
/// values and set operations on machines with hundreds of CPUs are a few word operations.
/// The words are shared between clones and copied on the first change ([`Arc::make_mut`]): a
/// set of 8,192 CPUs is 1 KiB, and a large machine's 100,000 tasks and 50,000 IRQs hold a
/// handful of distinct sets (the reader shares equal ones).
#[derive(Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CpuSet(Arc<Vec<u64>>);

/// Equal CPU sets read many times (every task's allowed CPUs, every IRQ's affinity) made one
/// shared set, so that memory grows with the distinct sets rather than with the readers.
/// Hashed with foldhash, not SipHash: a set of 8,192 CPUs is 1 KiB to hash.
#[derive(Default)]
pub(crate) struct Interner {
    /// The distinct sets.
    sets: HashSet<CpuSet, foldhash::fast::RandomState>,
    /// The CPU list texts parsed so far, with their sets: 100,000 tasks' `Cpus_allowed_list`
    /// are a few texts, and a text seen before is not parsed, hashed and compared again as
    /// a 1 KiB set.
    lists: HashMap<Box<str>, CpuSet, foldhash::fast::RandomState>,
}

impl Interner {
    /// The set equal to `set` seen before (sharing its words), else `set`, now remembered.
    pub(crate) fn intern(&mut self, set: CpuSet) -> CpuSet {
        if let Some(known) = self.sets.get(&set) {
            return known.clone();
        }
        self.sets.insert(set.clone());
        set
    }

    /// `text` parsed as a CPU list ([`CpuSet::parse_list`]), interned.
    pub(crate) fn parse_list(&mut self, text: &str) -> Result<CpuSet, CpuSetError> {
        if let Some(known) = self.lists.get(text) {
            return Ok(known.clone());
        }
        let set = self.intern(CpuSet::parse_list(text)?);
        self.lists.insert(text.into(), set.clone());
        Ok(set)
    }

    /// `text` parsed as a CPU mask ([`CpuSet::parse_mask`]), interned.
    pub(crate) fn parse_mask(&mut self, text: &str) -> Result<CpuSet, CpuSetError> {
        Ok(self.intern(CpuSet::parse_mask(text)?))
    }
}

/// Which list syntax the reader of a CPU list accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListSyntax {
    /// Numbers and ranges (`0-3,8`): every kernel, every `*_list` file, every tool.
    Ranges,
    /// Also the group form `first-last:used/group_size` (`0-15:2/4` is 0-1,4-5,8-9,12-13),
    /// which the kernel's `bitmap_parselist()` (`cpulist_parse()`, behind `isolcpus=`,
    /// `nohz_full=`, `rcu_nocbs=` and `irqaffinity=`) accepts since Linux 4.9: commit
    /// 2d13e6ca429c ("lib/bitmap.c: enhance bitmap syntax"), documented in
    /// Documentation/admin-guide/kernel-parameters.rst, "cpu lists".
    Groups,
}

/// Why a CPU list or mask could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CpuSetError {
    /// A token that is not a number, a range or a stride range.
    #[error("'{token}' is not a CPU number or range (expected forms like 3, 0-7 or 0-15:2/4)")]
    BadToken {
        /// The offending token.
        token: String,
    },
    /// A range whose end is lower than its start.
    #[error("range '{token}' runs backwards (write the lower CPU first)")]
    Backwards {
        /// The offending token.
        token: String,
    },
    /// A CPU number above the supported maximum.
    #[error("CPU {cpu} is out of range (at most {max})")]
    TooLarge {
        /// The number given.
        cpu: u64,
        /// The largest accepted CPU number.
        max: u32,
    },
    /// A mask group that is not hexadecimal of at most 8 digits.
    #[error("mask group '{group}' is not a 32-bit hexadecimal number")]
    BadMaskGroup {
        /// The offending group.
        group: String,
    },
    /// A list that names no CPU where at least one is needed (a flag's value).
    #[error("the list names no CPU; give CPUs such as 2-7 or 1-7,9-15")]
    Empty,
}

/// The largest CPU number accepted from text (the kernel's NR_CPUS maximum is 8192).
pub(crate) const MAX_CPU: u32 = 8191;

impl CpuSet {
    /// The empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses the kernel's list form as a person gives CPUs (`1`, `2-3,6`, `0-15:2/4`): the one
    /// parser of every flag that names CPUs. A list that names no CPU is refused.
    pub(crate) fn parse_some(text: &str) -> Result<Self, CpuSetError> {
        let cpus = CpuSet::parse_list(text)?;
        if cpus.is_empty() {
            return Err(CpuSetError::Empty);
        }
        Ok(cpus)
    }

    /// Parses the kernel's list form. Empty text (or only whitespace/NULs) is the empty set.
    pub fn parse_list(text: &str) -> Result<Self, CpuSetError> {
        let mut set = CpuSet::new();
        let text = clean(text);
        if text.is_empty() {
            return Ok(set);
        }
        for token in text.split(',') {
            let token = token.trim();
            let bad = || CpuSetError::BadToken {
                token: token.to_string(),
            };
            let (range, stride) = match token.split_once(':') {
                Some((range, stride)) => {
                    let (used, group) = stride.split_once('/').ok_or_else(bad)?;
                    let used: u32 = used.parse().map_err(|_| bad())?;
                    let group: u32 = group.parse().map_err(|_| bad())?;
                    if used == 0 || group == 0 || used > group {
                        return Err(bad());
                    }
                    (range, Some((used, group)))
                }
                None => (token, None),
            };
            let (lo, hi) = match range.split_once('-') {
                Some((lo, hi)) => (parse_cpu(lo, token)?, parse_cpu(hi, token)?),
                None => {
                    let cpu = parse_cpu(range, token)?;
                    (cpu, cpu)
                }
            };
            if hi < lo {
                return Err(CpuSetError::Backwards {
                    token: token.to_string(),
                });
            }
            match stride {
                Some((used, group)) => {
                    for cpu in (lo..=hi).filter(|cpu| (cpu - lo) % group < used) {
                        set.insert(cpu);
                    }
                }
                None => set.insert_range(lo, hi),
            }
        }
        Ok(set)
    }

    /// Parses the kernel's mask form (`ff,ffffffff`); `0x` prefixes are accepted.
    pub fn parse_mask(text: &str) -> Result<Self, CpuSetError> {
        let text = clean(text);
        let mut set = CpuSet::new();
        if text.is_empty() {
            return Ok(set);
        }
        let groups: Vec<&str> = text.split(',').collect();
        for (index_from_right, group) in groups.iter().rev().enumerate() {
            let digits = group
                .trim()
                .trim_start_matches("0x")
                .trim_start_matches("0X");
            if digits.is_empty() || digits.len() > 8 {
                return Err(CpuSetError::BadMaskGroup {
                    group: group.to_string(),
                });
            }
            let value = u32::from_str_radix(digits, 16).map_err(|_| CpuSetError::BadMaskGroup {
                group: group.to_string(),
            })?;
            if value == 0 {
                continue;
            }
            let highest = index_from_right as u64 * 32 + 31 - u64::from(value.leading_zeros());
            if highest > MAX_CPU as u64 {
                return Err(CpuSetError::TooLarge {
                    cpu: highest,
                    max: MAX_CPU,
                });
            }
            let word = index_from_right / 2;
            let shift = (index_from_right % 2) * 32;
            set.grow_to(word);
            set.words_mut()[word] |= u64::from(value) << shift;
        }
        set.trim();
        Ok(set)
    }

    /// The list form, as the kernel writes it (`0-3,8`), empty for the empty set.
    pub fn to_list(&self) -> String {
        self.to_list_in(ListSyntax::Ranges)
    }

    /// The list form for a reader that accepts `syntax`. With `ListSyntax::Groups`, a
    /// stretch of equally long runs at an equal distance is written as one group,
    /// `first-last:used/group_size` (`1-4095:31/32` for CPU 1 to 31 of every 32, where the
    /// range form needs 128 entries), whenever that is shorter than the runs it replaces.
    /// Stretches are taken greedily from the lowest CPU, each as long as it goes: never longer
    /// than the range form, and one group for the regular partitions lowlat plans, though an
    /// irregular set may have a shorter writing still.
    pub fn to_list_in(&self, syntax: ListSyntax) -> String {
        let runs = self.runs();
        let mut out = String::new();
        let mut i = 0;
        while i < runs.len() {
            if !out.is_empty() {
                out.push(',');
            }
            let end = match syntax {
                ListSyntax::Ranges => i,
                ListSyntax::Groups => last_of_stride(&runs, i),
            };
            let grouped = (end > i).then(|| {
                let (first, last) = (runs[i].0, runs[end].1);
                let used = runs[i].1 - first + 1;
                let group = runs[i + 1].0 - first;
                format!("{first}-{last}:{used}/{group}")
            });
            match grouped {
                Some(token) if token.len() < ranges_len(&runs[i..=end]) => {
                    out.push_str(&token);
                    i = end + 1;
                }
                _ => {
                    push_run(&mut out, runs[i]);
                    i += 1;
                }
            }
        }
        out
    }

    /// The maximal runs of consecutive CPUs as `(first, last)` pairs, ascending, found a
    /// 64-bit word at a time (the cost grows with the number of words and runs, not CPUs).
    pub fn runs(&self) -> Vec<(u32, u32)> {
        let mut runs = Vec::new();
        let mut open: Option<u32> = None;
        for (index, &word) in self.0.iter().enumerate() {
            let base = index as u32 * 64;
            let mut bit = 0;
            while bit < 64 {
                let rest = word >> bit;
                match open {
                    None if rest == 0 => break,
                    None => {
                        bit += rest.trailing_zeros();
                        open = Some(base + bit);
                    }
                    Some(first) => {
                        let ones = rest.trailing_ones();
                        if bit + ones >= 64 {
                            break;
                        }
                        bit += ones;
                        runs.push((first, base + bit - 1));
                        open = None;
                    }
                }
            }
        }
        if let (Some(first), Some(last)) = (open, self.last()) {
            runs.push((first, last));
        }
        runs
    }

    /// The mask form exactly as the kernel writes it on a machine with `nr_cpu_ids` possible
    /// CPUs (`smp_affinity`, `cpumask` files): comma-separated 32-bit groups, the most
    /// significant first, zero-padded to the width of `nr_cpu_ids` bits: every group 8 digits
    /// except the first, which holds the remaining bits (`0101` for CPUs 0 and 8 of 16;
    /// `00000001,00000001` for CPUs 0 and 32 of 64). A set with a CPU at or above
    /// `nr_cpu_ids` is widened to hold it.
    pub fn to_mask(&self, nr_cpu_ids: u32) -> String {
        let highest = self.last().map_or(0, |c| c + 1);
        let bits = highest.max(nr_cpu_ids).max(1);
        let ngroups = bits.div_ceil(32) as usize;
        let groups: Vec<u32> = (0..ngroups)
            .map(|g| {
                let word = self.0.get(g / 2).copied().unwrap_or(0);
                (word >> ((g % 2) * 32)) as u32
            })
            .collect();
        let mut out = String::new();
        for (i, value) in groups.iter().enumerate().rev() {
            if i == ngroups - 1 {
                let rem_bits = bits - (ngroups as u32 - 1) * 32;
                let first_digits = rem_bits.div_ceil(4) as usize;
                out.push_str(&format!("{value:0first_digits$x}"));
            } else {
                out.push_str(&format!(",{value:08x}"));
            }
        }
        out
    }

    /// Adds one CPU; returns whether it was new.
    pub fn insert(&mut self, cpu: u32) -> bool {
        let (word, bit) = (cpu as usize / 64, cpu % 64);
        self.grow_to(word);
        let was = self.0[word] & (1 << bit) != 0;
        self.words_mut()[word] |= 1 << bit;
        !was
    }

    /// Adds every CPU from `lo` to `hi`, both included.
    pub fn insert_range(&mut self, lo: u32, hi: u32) {
        if hi < lo {
            return;
        }
        let (first, last) = (lo as usize / 64, hi as usize / 64);
        self.grow_to(last);
        for (index, word) in self.words_mut()[first..=last].iter_mut().enumerate() {
            let from = if index == 0 { lo % 64 } else { 0 };
            let to = if first + index == last { hi % 64 } else { 63 };
            *word |= (u64::MAX << from) & (u64::MAX >> (63 - to));
        }
    }

    /// Removes one CPU; returns whether it was there.
    pub fn remove(&mut self, cpu: u32) -> bool {
        let was = self.contains(cpu);
        if was {
            self.words_mut()[cpu as usize / 64] &= !(1 << (cpu % 64));
            self.trim();
        }
        was
    }

    /// Whether `cpu` is in the set.
    pub fn contains(&self, cpu: u32) -> bool {
        self.0
            .get(cpu as usize / 64)
            .is_some_and(|word| word & (1 << (cpu % 64)) != 0)
    }

    /// Number of CPUs in the set.
    pub fn len(&self) -> usize {
        self.0.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The CPUs in ascending order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = u32> + '_ {
        self.runs()
            .into_iter()
            .flat_map(|(first, last)| first..=last)
    }

    /// The lowest CPU, if any.
    pub fn first(&self) -> Option<u32> {
        self.0
            .iter()
            .position(|&w| w != 0)
            .map(|i| i as u32 * 64 + self.0[i].trailing_zeros())
    }

    /// The highest CPU, if any.
    pub fn last(&self) -> Option<u32> {
        self.0
            .last()
            .map(|w| (self.0.len() as u32 - 1) * 64 + 63 - w.leading_zeros())
    }

    /// CPUs in both sets.
    pub fn intersection(&self, other: &CpuSet) -> CpuSet {
        self.zip(other, |a, b| a & b)
    }

    /// CPUs in either set.
    pub fn union(&self, other: &CpuSet) -> CpuSet {
        self.zip(other, |a, b| a | b)
    }

    /// Adds the CPUs of `other`, in place (a union that grows one set needs no new one).
    pub fn union_with(&mut self, other: &CpuSet) {
        self.grow_to(other.0.len().saturating_sub(1));
        for (word, &add) in self.words_mut().iter_mut().zip(other.0.iter()) {
            *word |= add;
        }
        self.trim();
    }

    /// CPUs in `self` but not in `other`.
    pub fn difference(&self, other: &CpuSet) -> CpuSet {
        self.zip(other, |a, b| a & !b)
    }

    /// Whether every CPU of `self` is in `other`.
    pub fn is_subset(&self, other: &CpuSet) -> bool {
        self.0
            .iter()
            .enumerate()
            .all(|(i, word)| word & !other.0.get(i).copied().unwrap_or(0) == 0)
    }

    /// Whether the sets share a CPU.
    pub fn intersects(&self, other: &CpuSet) -> bool {
        self.0.iter().zip(other.0.iter()).any(|(a, b)| a & b != 0)
    }

    fn zip(&self, other: &CpuSet, op: impl Fn(u64, u64) -> u64) -> CpuSet {
        let len = self.0.len().max(other.0.len());
        let word = |set: &CpuSet, i: usize| set.0.get(i).copied().unwrap_or(0);
        let mut out = CpuSet(Arc::new(
            (0..len)
                .map(|i| op(word(self, i), word(other, i)))
                .collect(),
        ));
        out.trim();
        out
    }

    fn grow_to(&mut self, word: usize) {
        if self.0.len() <= word {
            self.words_mut().resize(word + 1, 0);
        }
    }

    /// Drops trailing zero words, so that equal sets compare equal.
    fn trim(&mut self) {
        while self.0.last() == Some(&0) {
            self.words_mut().pop();
        }
    }

    /// The words, to change: this set's own copy of them.
    fn words_mut(&mut self) -> &mut Vec<u64> {
        Arc::make_mut(&mut self.0)
    }
}

/// The index of the last run of the stride that starts at `runs[first]`: the following runs
/// as long as it, each at the same distance from the one before. `first` itself when the next
/// run breaks the pattern.
fn last_of_stride(runs: &[(u32, u32)], first: usize) -> usize {
    let Some(next) = runs.get(first + 1) else {
        return first;
    };
    let used = runs[first].1 - runs[first].0;
    let group = next.0 - runs[first].0;
    let mut last = first;
    while let Some(&(lo, hi)) = runs.get(last + 1) {
        if lo - runs[last].0 != group || hi - lo != used {
            break;
        }
        last += 1;
    }
    last
}

/// The length of `runs` written in the range form, commas included.
fn ranges_len(runs: &[(u32, u32)]) -> usize {
    let digits = |n: u32| n.checked_ilog10().unwrap_or(0) as usize + 1;
    let tokens: usize = runs
        .iter()
        .map(|&(lo, hi)| {
            if lo == hi {
                digits(lo)
            } else {
                digits(lo) + 1 + digits(hi)
            }
        })
        .sum();
    tokens + runs.len() - 1
}

/// Appends one run in the range form (`5` or `0-3`).
fn push_run(out: &mut String, (first, last): (u32, u32)) {
    use std::fmt::Write;
    let _ = if first == last {
        write!(out, "{first}")
    } else {
        write!(out, "{first}-{last}")
    };
}

/// Strips the newline, spaces and trailing NUL bytes some kernels leave in sysfs files.
fn clean(text: &str) -> &str {
    text.trim_matches(|c: char| c.is_whitespace() || c == '\0')
}

fn parse_cpu(text: &str, token: &str) -> Result<u32, CpuSetError> {
    let value: u64 = text.trim().parse().map_err(|_| CpuSetError::BadToken {
        token: token.to_string(),
    })?;
    if value > MAX_CPU as u64 {
        return Err(CpuSetError::TooLarge {
            cpu: value,
            max: MAX_CPU,
        });
    }
    Ok(value as u32)
}

impl FromIterator<u32> for CpuSet {
    fn from_iter<I: IntoIterator<Item = u32>>(iter: I) -> Self {
        let mut set = CpuSet::new();
        for cpu in iter {
            set.insert(cpu);
        }
        set
    }
}

impl FromStr for CpuSet {
    type Err = CpuSetError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse_list(s)
    }
}

impl fmt::Display for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_list())
    }
}

impl fmt::Debug for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CpuSet({})", self.to_list())
    }
}

impl Serialize for CpuSet {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_list())
    }
}

impl<'de> Deserialize<'de> for CpuSet {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::parse_list(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cpu_list_given_by_a_person_names_at_least_one_cpu() {
        assert_eq!(CpuSet::parse_some("2-3,6").unwrap().to_list(), "2-3,6");
        assert!(CpuSet::parse_some("x").is_err());
        // An empty --isolate was "no CPU is left to isolate; keep fewer cores for housekeeping".
        for empty in ["", " "] {
            assert_eq!(
                CpuSet::parse_some(empty),
                Err(CpuSetError::Empty),
                "{empty:?}"
            );
        }
    }
    use proptest::prelude::*;

    #[test]
    fn list_texts_parse_once_into_shared_sets_and_bad_ones_are_refused_each_time() {
        let mut interner = Interner::default();
        let first = interner.parse_list("0-8191").unwrap();
        let again = interner.parse_list("0-8191").unwrap();
        let spelt_otherwise = interner.parse_list("0-4095,4096-8191").unwrap();
        assert_eq!(first.len(), 8192);
        assert!(Arc::ptr_eq(&first.0, &again.0));
        assert!(Arc::ptr_eq(&first.0, &spelt_otherwise.0));
        // A mask of the same text is another set: "1" is CPU 0 as a mask, CPU 1 as a list.
        assert_eq!(interner.parse_list("1").unwrap().to_list(), "1");
        assert_eq!(interner.parse_mask("1").unwrap().to_list(), "0");
        for _ in 0..2 {
            assert!(interner.parse_list("5-2").is_err());
        }
    }

    #[test]
    fn clones_share_their_words_until_one_changes() {
        let mut interner = Interner::default();
        let first = interner.intern(CpuSet::parse_list("0-8191").unwrap());
        let second = interner.intern(CpuSet::parse_list("0-8191").unwrap());
        assert!(Arc::ptr_eq(&first.0, &second.0));
        let other = interner.intern(CpuSet::parse_list("1").unwrap());
        assert!(!Arc::ptr_eq(&first.0, &other.0));
        let mut changed = second.clone();
        changed.remove(5);
        assert_eq!(changed.len(), 8191);
        assert_eq!((first.len(), second.len()), (8192, 8192));
    }

    #[test]
    fn union_with_grows_in_place() {
        let mut set = CpuSet::parse_list("1").unwrap();
        set.union_with(&CpuSet::parse_list("200-201").unwrap());
        assert_eq!(set.to_list(), "1,200-201");
        set.union_with(&CpuSet::new());
        assert_eq!(set, CpuSet::parse_list("1,200-201").unwrap());
        let mut empty = CpuSet::new();
        empty.union_with(&CpuSet::new());
        assert_eq!(empty, CpuSet::new());
    }

    #[test]
    fn parses_the_kernel_list_forms() {
        let set = CpuSet::parse_list("0-3,8-11\n").unwrap();
        assert_eq!(set.to_list(), "0-3,8-11");
        assert_eq!(CpuSet::parse_list("").unwrap().len(), 0);
        assert_eq!(CpuSet::parse_list("5\0\0").unwrap().to_list(), "5");
        assert_eq!(
            CpuSet::parse_list("0-15:2/4").unwrap().to_list(),
            "0-1,4-5,8-9,12-13"
        );
    }

    #[test]
    fn rejects_malformed_lists() {
        for bad in ["1-", "a", "3-1", "1,,2", "-1", "0-15:0/4", "99999"] {
            assert!(CpuSet::parse_list(bad).is_err(), "{bad} should be rejected");
        }
    }

    #[test]
    fn masks_are_written_as_the_kernel_writes_them() {
        // Isolated 1-7,9-15 and housekeeping 0,8 of a 16-CPU machine: 4 digits.
        assert_eq!(CpuSet::parse_list("1-7,9-15").unwrap().to_mask(16), "fefe");
        assert_eq!(CpuSet::parse_list("0,8").unwrap().to_mask(16), "0101");
        assert_eq!(
            CpuSet::parse_list("0-39").unwrap().to_mask(40),
            "ff,ffffffff"
        );
        assert_eq!(CpuSet::parse_mask("ff,ffffffff").unwrap().to_list(), "0-39");
        assert_eq!(
            CpuSet::parse_mask("00000000,00000101").unwrap().to_list(),
            "0,8"
        );
        assert_eq!(CpuSet::new().to_mask(2), "0");
        assert_eq!(CpuSet::new().to_mask(16), "0000");
        // 256 CPUs: 8 full groups, the first one zero-padded as well.
        let every_32nd: CpuSet = (0..256).step_by(32).collect();
        assert_eq!(every_32nd.to_mask(256), ["00000001"; 8].join(","));
        // 112 CPUs (the fixtures README): the first group holds 16 bits.
        let set = CpuSet::parse_list("30,86").unwrap();
        assert_eq!(set.to_mask(112), "0000,00400000,00000000,40000000");
        // A CPU beyond nr_cpu_ids widens the mask rather than being lost.
        assert_eq!(CpuSet::parse_list("8").unwrap().to_mask(4), "100");
    }

    #[test]
    fn padded_masks_match_proc_irq() {
        // A 16-CPU machine prints smp_affinity as 4 hex digits; 128 CPUs as 4 full groups.
        let set = CpuSet::parse_list("0").unwrap();
        assert_eq!(set.to_mask(16), "0001");
        assert_eq!(set.to_mask(128), "00000000,00000000,00000000,00000001");
        assert_eq!(set.to_mask(2), "1");
    }

    #[test]
    fn runs_are_found_across_words() {
        let set = CpuSet::parse_list("0,2-70,127-128,191,192,255").unwrap();
        assert_eq!(
            set.runs(),
            [(0, 0), (2, 70), (127, 128), (191, 192), (255, 255)]
        );
        assert_eq!(set.to_list(), "0,2-70,127-128,191-192,255");
        assert_eq!(CpuSet::parse_list("0-8191").unwrap().runs(), [(0, 8191)]);
        assert!(CpuSet::new().runs().is_empty());
        let mut ranged = CpuSet::new();
        ranged.insert_range(60, 130);
        ranged.insert_range(5, 5);
        ranged.insert_range(9, 8);
        assert_eq!(ranged.to_list(), "5,60-130");
        assert_eq!(ranged.iter().next_back(), Some(130));
    }

    #[test]
    fn groups_shorten_lists_of_equal_runs() {
        let groups = |list: &str| {
            CpuSet::parse_list(list)
                .unwrap()
                .to_list_in(ListSyntax::Groups)
        };
        // One housekeeping core per 32 on 4,096 cores and their SMT siblings.
        let isolated: CpuSet = (0..8192).filter(|cpu| cpu % 32 != 0).collect();
        assert_eq!(isolated.to_list_in(ListSyntax::Groups), "1-8191:31/32");
        let housekeeping: CpuSet = (0..8192).filter(|cpu| cpu % 32 == 0).collect();
        assert_eq!(housekeeping.to_list_in(ListSyntax::Groups), "0-8160:1/32");
        // Where a group is not shorter, the ranges stay.
        assert_eq!(groups("1-7,9-15"), "1-7,9-15");
        assert_eq!(groups("0,2,4"), "0,2,4");
        assert_eq!(groups("0,2,4,6"), "0,2,4,6");
        assert_eq!(groups("0,2,4,6,8"), "0-8:1/2");
        assert_eq!(groups("1-2,9,17,25,33"), "1-2,9-33:1/8");
        assert_eq!(groups(""), "");
        // The ranges syntax never groups.
        assert_eq!(isolated.to_list().matches(',').count(), 255);
    }

    proptest! {
        #[test]
        fn list_round_trips(cpus in proptest::collection::btree_set(0u32..600, 0..80)) {
            let expected: Vec<u32> = cpus.iter().copied().collect();
            let set: CpuSet = cpus.into_iter().collect();
            prop_assert_eq!(set.iter().collect::<Vec<_>>(), expected);
            prop_assert_eq!(CpuSet::parse_list(&set.to_list()).unwrap(), set.clone());
            let grouped = set.to_list_in(ListSyntax::Groups);
            prop_assert!(grouped.len() <= set.to_list().len());
            prop_assert_eq!(CpuSet::parse_list(&grouped).unwrap(), set.clone());
            prop_assert_eq!(CpuSet::parse_mask(&set.to_mask(1)).unwrap(), set.clone());
            prop_assert_eq!(CpuSet::parse_mask(&set.to_mask(600)).unwrap(), set);
        }

        #[test]
        fn parsers_never_panic(text in ".{0,40}") {
            let _ = CpuSet::parse_list(&text);
            let _ = CpuSet::parse_mask(&text);
        }
    }
}

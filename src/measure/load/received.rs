//! The IPIs that reached the measured CPUs: the function-call (`CAL`) and TLB-shootdown
//! (`TLB`) rows of `/proc/interrupts` (x86; arm64 names them `IPI` rows by number, not read
//! here), read through the SysRoot and summed over the CPUs.

use crate::machine::irq::{self, InterruptTable};
use crate::machine::{CpuSet, Reader};
use crate::sysroot::SysRoot;

/// The rows of `/proc/interrupts` that count IPIs a load sends.
const IPI_ROWS: [&str; 2] = ["CAL", "TLB"];

/// The IPIs `cpus` received since boot; `None` where `/proc/interrupts` cannot be read or has
/// none of the rows.
pub(crate) fn ipis(root: &SysRoot, cpus: &CpuSet) -> Option<u64> {
    let table = irq::read_counts(&mut Reader::new(root))?;
    of_table(&table, cpus)
}

/// The IPIs of `table` on `cpus`.
fn of_table(table: &InterruptTable, cpus: &CpuSet) -> Option<u64> {
    let rows: Vec<_> = (table.rows.iter())
        .filter(|row| IPI_ROWS.contains(&row.id.as_str()))
        .collect();
    if rows.is_empty() {
        return None;
    }
    Some(
        rows.iter()
            .flat_map(|row| cpus.iter().map(|cpu| table.count(row, cpu)))
            .sum(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_tree::TestTree;

    #[test]
    fn function_calls_and_shootdowns_are_summed_on_the_cpus_asked() {
        let tree = TestTree::empty();
        tree.write(
            "/proc/interrupts",
            "           CPU0       CPU1       CPU2\n  \
             1:          9          0          0   IO-APIC   1-edge      i8042\n\
             LOC:    100    200    300   Local timer interrupts\n\
             CAL:      5     70      1   Function call interrupts\n\
             TLB:      2     30      4   TLB shootdowns\n\
             ERR:          0\n",
        );
        let cpus = CpuSet::parse_list("1-2").unwrap();
        assert_eq!(ipis(&tree.root(), &cpus), Some(105));
        tree.write(
            "/proc/interrupts",
            "           CPU0\n  1:  9   IO-APIC   1-edge  i8042\nERR:   0\n",
        );
        assert_eq!(ipis(&tree.root(), &cpus), None);
    }
}

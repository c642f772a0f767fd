//! The note `inventory`, `audit` and `plan` print on stderr when lowlat runs in a container
//! and reads the container's own `/`: what it judges, what it cannot, and how to audit the
//! node instead.

use crate::machine::container;
use crate::machine::topology::Topology;
use crate::sysroot::SysRoot;

/// Prints the note when `root` is the live `/` of a container.
pub(super) fn note(root: &SysRoot, topology: &Topology) {
    let Some(found) = container::detect(root) else {
        return;
    };
    let allowed = crate::measure::runner::harness::current_affinity().ok();
    let lines = container::note(&found, allowed.as_ref(), &topology.online_cpus());
    super::messages::note!("{}", lines.join("\n"));
}

//! Every rendering of lowlat's results, for people and for programs: terminal printers, the
//! JSON documents' bodies (in the `crate::document` envelope), the comparison's tables and the
//! plan's summary and diff. Report reads the layers below it (machine, audit, plan, apply,
//! measure); nothing below imports it.

pub(crate) mod apply;
pub mod audit;
pub mod bios;
pub(crate) mod check;
pub mod compare;
pub(crate) mod fix_script;
pub mod freebsd;
pub mod html;
pub mod inventory;
pub(crate) mod matrix;
pub(crate) mod measure;
pub(crate) mod nfd;
pub mod nic;
pub mod plan;
pub(crate) mod table;
pub mod timesync;
pub(crate) mod watch;
pub(crate) mod workload;

use crate::document::UNKNOWN_HOST;
use crate::machine::Machine;

/// The `host` of a document about `machine`: its host name, or `unknown`.
pub fn host(machine: &Machine) -> String {
    machine
        .kernel
        .hostname
        .get()
        .cloned()
        .unwrap_or_else(|| UNKNOWN_HOST.to_string())
}

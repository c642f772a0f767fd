//! Every rendering of lowlat's results, for people and for programs: terminal printers, the
//! JSON documents' bodies (in the `crate::document` envelope), the comparison's tables and the
//! plan's summary and diff; and the reading back of the runs compare, fleet and the HTML
//! report take (`runs`), through the types that write lowlat's documents. Report reads the
//! layers below it (machine, audit, plan, apply, measure, compare); nothing below imports it.

pub(crate) mod apply;
pub mod audit;
pub(crate) mod audited;
pub mod bios;
pub(crate) mod check;
#[cfg(test)]
mod check_examples;
pub(crate) mod check_load;
pub mod compare;
pub(crate) mod fix_script;
pub(crate) mod fleet;
pub mod freebsd;
pub mod html;
pub mod inventory;
pub(crate) mod matrix;
pub(crate) mod measure;
pub(crate) mod nfd;
pub mod nic;
pub mod plan;
pub(crate) mod profile;
pub mod runs;
pub(crate) mod shown;
pub(crate) mod sosreport;
pub(crate) mod table;
pub mod timesync;
pub(crate) mod watch;
pub(crate) mod workload;

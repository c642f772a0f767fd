//! lowlat's integration tests, one binary: each module covers one subcommand or reader, and
//! `support` holds what they share (the fixture machines, the lowlat binary, golden files).
//!
//! Tests that change or measure the live machine are `#[ignore]`d and run only with
//! `LOWLAT_LIVE_TESTS=1 cargo test -- --include-ignored` (CI does this, as root).

mod support;

mod ablation;
mod apply_cli;
mod apply_defects;
mod apply_live;
mod audit;
mod audit_fixes;
mod audit_kubelet;
mod audit_workload;
mod bench;
mod bios;
mod bios_hostile;
mod bios_vendors;
mod cli_measure;
mod compare;
mod compare_aa;
mod compare_causes;
mod compare_net;
mod compare_peers;
mod completions;
mod convergence;
mod deploy;
mod docs;
mod explain_live;
mod fleet;
mod freebsd;
mod fuzz;
mod hostile_input;
mod hwloc_samples;
mod inventory;
mod isolation_live;
mod isolation_v2;
mod layers;
mod links_out;
mod live_known_answer;
mod load_live;
mod machine_readers;
mod measure_bounds;
mod measure_defects;
mod measure_hw;
mod must_gather;
mod net_live;
mod nic_live;
mod placement_guide;
mod plan;
mod plan_cli;
mod plan_defects;
mod plan_hostile;
mod plan_platforms;
mod plan_tuned;
mod profiles;
mod prove;
mod replay_cyclictest;
mod replay_sysjitter;
mod report_html;
mod run_cli;
mod snapshot;
mod sosreport;
mod sosreport_fleet;
mod style;
mod time_sync_guide;
mod time_sync_live;
mod tuned_as_planned;
mod vm;
mod watch;

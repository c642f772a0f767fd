//! The terminal summary of a plan: the partition in every form users need, then the settings
//! by layer, what was skipped and what stays on the isolated CPUs.

use crate::text::Page;

use crate::bios::value_text;
use crate::machine::CpuSet;
use crate::machine::topology::Topology;
use crate::plan::Plan;
use crate::plan::bios::BiosPlan;
use crate::tuning::setting::Layer;

/// Width of the label column.
const LABEL: usize = 20;

fn or_none(set: &CpuSet) -> String {
    if set.is_empty() {
        "none".into()
    } else {
        set.to_list()
    }
}

/// The summary; `topology` adds the per-node view of the partition, `held` says how many
/// settings the machine already holds (the plan lists every setting the profile wants,
/// whether it holds already or not).
pub(crate) fn text(plan: &Plan, topology: &Topology, held: Option<usize>) -> String {
    let p = &plan.partition;
    let mut out = Page::new();
    writeln!(
        out,
        "lowlat plan: profile {}, power {}",
        plan.profile, plan.options.power
    );
    writeln!(
        out,
        "{:<LABEL$}{}{}, CPUs {}{}",
        "machine",
        plan.target.host,
        plan.target
            .model
            .as_deref()
            .map(|m| format!(", {m}"))
            .unwrap_or_default(),
        plan.target.cpus.to_list(),
        plan.target
            .cpus_after_reboot
            .as_ref()
            .map(|after| format!(" ({} after the reboot: SMT off)", after.to_list()))
            .unwrap_or_default()
    );

    out.text("\nPartition\n");
    let row = |out: &mut Page, label: &str, text: String| {
        writeln!(out, "  {label:<w$}{text}", w = LABEL - 2);
    };
    row(
        &mut out,
        "housekeeping",
        format!(
            "{}  (mask {})",
            p.housekeeping.to_list(),
            p.housekeeping_mask()
        ),
    );
    row(
        &mut out,
        "isolated",
        format!("{}  (mask {})", p.isolated.to_list(), p.isolated_mask()),
    );
    if let Some(types) = &topology.core_types {
        let named = |cpus: &CpuSet| {
            let kinds: Vec<&str> = types
                .types_in(cpus)
                .into_iter()
                .map(|k| k.plural())
                .collect();
            kinds.join(" and ")
        };
        row(
            &mut out,
            "core types",
            format!(
                "isolated on {}, housekeeping on {} (hybrid CPU; --isolate-core-type p|e)",
                named(&p.isolated),
                named(&p.housekeeping)
            ),
        );
    }
    row(&mut out, "no-balance", or_none(&p.no_balance));
    row(
        &mut out,
        "TuneD",
        format!("isolated_cores={}", p.isolated.to_list()),
    );
    row(
        &mut out,
        "",
        if p.no_balance.is_empty() {
            "no_balance_cores unset".into()
        } else {
            format!("no_balance_cores={}", p.no_balance.to_list())
        },
    );
    row(
        &mut out,
        "",
        format!("tuned.non_isolcpus={}", p.tuned_non_isolcpus()),
    );
    row(
        &mut out,
        "Kubernetes",
        format!(
            "reservedSystemCPUs={} (cpuManagerPolicy static)",
            p.housekeeping.to_list()
        ),
    );
    row(
        &mut out,
        "",
        format!(
            "PerformanceProfile cpu.reserved={} cpu.isolated={}",
            p.housekeeping.to_list(),
            p.isolated.to_list()
        ),
    );
    for node in &topology.nodes {
        let online = node.cpus.intersection(&plan.target.cpus);
        if online.is_empty() {
            continue;
        }
        row(
            &mut out,
            &format!("node {}", node.id),
            format!(
                "housekeeping {}, isolated {}",
                or_none(&online.intersection(&p.housekeeping)),
                or_none(&online.intersection(&p.isolated))
            ),
        );
    }

    match held {
        Some(held) => writeln!(
            out,
            "\nSettings ({}, {held} already as planned: `lowlat plan --diff` marks them =)",
            plan.settings.len()
        ),
        None => writeln!(out, "\nSettings ({})", plan.settings.len()),
    }
    for layer in [
        Layer::Boot,
        Layer::Sysctl,
        Layer::Runtime,
        Layer::File,
        Layer::Service,
    ] {
        let settings: Vec<_> = plan.layer(layer).collect();
        if settings.is_empty() {
            continue;
        }
        let reboot = if settings.iter().all(|s| s.reboot) {
            " (takes effect at the next boot)"
        } else {
            ""
        };
        writeln!(out, "  {}{reboot}", layer.name());
        match layer {
            Layer::Boot => {
                for s in &settings {
                    let label = if s.security_tradeoff.is_some() {
                        "  [SECURITY TRADE-OFF]"
                    } else {
                        ""
                    };
                    let value = if s.value.is_empty() {
                        format!("remove {}", s.id)
                    } else {
                        s.value.clone()
                    };
                    writeln!(out, "    {value}{label}");
                }
            }
            Layer::Runtime => {
                for s in settings.iter().filter(|s| !s.id.is_irq()) {
                    writeln!(out, "    {} = {}", s.id, s.value_for_people());
                }
                let irqs = settings.iter().filter(|s| s.id.is_irq()).count();
                if irqs > 0 {
                    writeln!(
                        out,
                        "    irq: {irqs} affinities (default and per IRQ; see irq-plan.txt)"
                    );
                }
            }
            Layer::File => {
                for s in &settings {
                    let path = s.id.without_family();
                    let boot = if s.reboot {
                        ", takes effect at the next boot"
                    } else {
                        ""
                    };
                    writeln!(out, "    {path} ({} lines{boot})", s.value.lines().count());
                }
            }
            _ => {
                for s in &settings {
                    let id = s.id.without_family();
                    writeln!(out, "    {id} = {}", s.value);
                }
            }
        }
    }
    if !plan.skipped.is_empty() {
        writeln!(out, "\nNot planned ({})", plan.skipped.len());
        for s in &plan.skipped {
            writeln!(
                out,
                "  {} = {}: {}",
                s.setting.id, s.setting.value, s.reason
            );
        }
    }
    if let Some(bios) = &plan.bios {
        render_bios(&mut out, bios);
    }
    if !plan.unmovable.is_empty() {
        writeln!(out, "\nStays where it is ({})", plan.unmovable.len());
        for u in &plan.unmovable {
            writeln!(out, "  {}: {}", u.what, u.reason);
        }
    }
    if plan.options.isolation.runtime() {
        writeln!(
            out,
            "\nWhat runtime isolation cannot do (what the kernel arguments add at boot)"
        );
        for line in crate::plan::runtime_plan::limits() {
            writeln!(out, "  {line}");
        }
        if !plan.options.isolation.boot() {
            writeln!(
                out,
                "  plan --isolation both adds them from the next boot; start the workload with `lowlat run -- COMMAND`"
            );
        }
    }
    out.text(
        "\nWrite the artifacts with --out DIR; compare with this machine with --diff; \
         print plan.json with --json.\n",
    );
    out.into_string()
}

/// The BIOS part: each attribute current → wanted, what is not planned, and how to stage it.
fn render_bios(out: &mut Page, bios: &BiosPlan) {
    writeln!(
        out,
        "\nBIOS on {} ({} change(s), staged at the next reset)",
        bios.bmc,
        bios.changes.len()
    );
    for c in &bios.changes {
        let display = c
            .display_name
            .as_deref()
            .map(|d| format!(" ({d})"))
            .unwrap_or_default();
        let current = c.current.as_ref().map_or("-".to_string(), value_text);
        writeln!(
            out,
            "  {}{display}: {current} -> {}   [{}, {}]",
            c.attribute,
            value_text(&c.wanted),
            c.intent,
            c.rule
        );
    }
    for s in &bios.skipped {
        writeln!(
            out,
            "  not planned: {} [{}]: {}",
            s.intent, s.rule, s.reason
        );
    }
    if !bios.changes.is_empty() {
        writeln!(
            out,
            "  Stage them with `lowlat bios apply --plan plan.json --bmc {} --journal FILE`, then reset the server.",
            bios.bmc
        );
    }
}

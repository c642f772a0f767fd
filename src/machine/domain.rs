//! One libvirt domain definition (`virsh dumpxml`, `/etc/libvirt/qemu/NAME.xml`), read with a
//! real XML parser into the parts that decide a real-time guest's latency: vCPU placement and
//! scheduling, emulator and I/O threads, CPU model, memory backing, clock and devices.
//!
//! The parser ([`roxmltree`]) refuses a document type declaration, so entity expansion
//! ("billion laughs") and external entities never happen: a domain with a `<!DOCTYPE>` is an
//! error naming the file. A document that is not well-formed is an error with its line and
//! column. What parses but does not make sense (a `<vcpupin>` for a vCPU beyond the count, an
//! element libvirt does not define under `<domain>`) is kept in [`Domain::problems`], each
//! naming its element and line, for the audit to report.

use serde::{Deserialize, Serialize};

use crate::machine::CpuSet;

/// Why a domain file could not be read as a libvirt domain.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[error("{path}: {message}")]
pub struct DomainError {
    /// The file.
    pub path: String,
    /// What is wrong, with the line and column where the parser knows them, and what to do.
    pub message: String,
}

/// The parts of one libvirt domain that matter for latency.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Domain {
    /// `<name>`.
    pub name: String,
    /// The file it was read from.
    pub path: String,
    /// `<vcpu>`: the number of vCPUs.
    pub vcpus: u32,
    /// `<vcpu cpuset=...>`: the host CPUs of vCPUs without a `<vcpupin>`, when given.
    pub vcpu_cpuset: Option<CpuSet>,
    /// `<cputune><vcpupin>`: host CPUs per vCPU, in document order.
    pub vcpupin: Vec<Pin>,
    /// `<cputune><emulatorpin cpuset=...>`: host CPUs of QEMU's emulator threads.
    pub emulatorpin: Option<CpuSet>,
    /// `<iothreads>`: the number of I/O threads.
    pub iothreads: u32,
    /// `<cputune><iothreadpin>`: host CPUs per I/O thread (ids from 1).
    pub iothreadpin: Vec<Pin>,
    /// `<cputune><vcpusched>`: scheduling policy per vCPU set.
    pub vcpusched: Vec<VcpuSched>,
    /// `<cpu>`: the guest CPU model.
    pub cpu: CpuModel,
    /// `<memory>` in KiB.
    pub memory_kib: u64,
    /// `<memoryBacking>`.
    pub memory_backing: MemoryBacking,
    /// `<memtune><hard_limit>` in KiB.
    pub hard_limit_kib: Option<u64>,
    /// `<numatune><memory>`.
    pub numatune: Option<NumaTune>,
    /// `<clock><timer>`: timers with their `present` attribute.
    pub timers: Vec<Timer>,
    /// `<features><pmu state=...>`: `Some(false)` when the virtual PMU is off.
    pub pmu: Option<bool>,
    /// `<devices>`: the devices that add exits or interrupts to a real-time guest.
    pub devices: Devices,
    /// What parses but does not make sense, each naming its element and line.
    pub problems: Vec<String>,
}

/// One `<vcpupin>` or `<iothreadpin>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pin {
    /// The vCPU number (from 0) or I/O thread id (from 1).
    pub id: u32,
    /// The host CPUs it may run on.
    pub cpuset: CpuSet,
}

/// One `<vcpusched>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VcpuSched {
    /// The vCPUs it applies to (libvirt's `vcpus` list, `^N` exclusions applied).
    pub vcpus: CpuSet,
    /// `fifo`, `rr`, `batch`, `idle` or `other`.
    pub scheduler: String,
    /// The real-time priority (1-99), for `fifo` and `rr`.
    pub priority: Option<u32>,
}

/// `<cpu>`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuModel {
    /// `mode`: `host-passthrough`, `host-model`, `custom`, `maximum`.
    pub mode: Option<String>,
    /// `<topology>` as (sockets, dies, cores, threads); absent values are 1.
    pub topology: Option<[u32; 4]>,
    /// `<feature>`s as (policy, name): `("require", "tsc-deadline")`.
    pub features: Vec<(String, String)>,
}

/// `<memoryBacking>`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryBacking {
    /// `<hugepages>` is present.
    pub hugepages: bool,
    /// `<hugepages><page>`s: size in KiB and host NUMA nodes.
    pub pages: Vec<HugePage>,
    /// `<locked/>`: guest memory is locked in host RAM.
    pub locked: bool,
    /// `<nosharepages/>`: KSM may not merge guest pages.
    pub nosharepages: bool,
}

/// One `<hugepages><page>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HugePage {
    /// Page size in KiB (1048576 for 1 GiB pages).
    pub size_kib: u64,
    /// The guest NUMA nodes backed by this size (`nodeset`), when given.
    pub nodeset: Option<CpuSet>,
}

/// `<numatune><memory>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NumaTune {
    /// `strict`, `preferred`, `interleave` or `restrictive`.
    pub mode: String,
    /// The host NUMA nodes memory comes from.
    pub nodeset: Option<CpuSet>,
}

/// One `<clock><timer>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timer {
    /// `kvmclock`, `hpet`, `tsc`, `rtc`, `pit`, `hypervclock`.
    pub name: String,
    /// `present='yes'|'no'`, when given.
    pub present: Option<bool>,
}

/// The devices a real-time guest should not have, by kind.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Devices {
    /// `<controller type=...>` as (type, model); `("usb", "none")` removes USB.
    pub controllers: Vec<(String, Option<String>)>,
    /// `<channel>` as (type, target name): `("unix", "org.qemu.guest_agent.0")`.
    pub channels: Vec<(String, Option<String>)>,
    /// `<sound model=...>`.
    pub sound: Vec<String>,
    /// `<memballoon model=...>`; `none` removes the balloon. `None` when absent (libvirt
    /// then adds a virtio balloon).
    pub memballoon: Option<String>,
    /// `<graphics type=...>`.
    pub graphics: Vec<String>,
    /// How many `<serial>` and `<console>` devices.
    pub serials: u32,
    /// `<input type=...>` on the USB bus (a tablet polls).
    pub usb_inputs: Vec<String>,
}

/// The child elements libvirt defines under `<domain>` (formatdomain); any other one is a
/// problem (a typo libvirt would reject).
const KNOWN: &[&str] = &[
    "name",
    "uuid",
    "genid",
    "title",
    "description",
    "metadata",
    "maxMemory",
    "memory",
    "currentMemory",
    "blkiotune",
    "memtune",
    "memoryBacking",
    "vcpu",
    "vcpus",
    "iothreads",
    "iothreadids",
    "defaultiothread",
    "cputune",
    "resource",
    "numatune",
    "os",
    "bootloader",
    "bootloader_args",
    "idmap",
    "sysinfo",
    "features",
    "cpu",
    "clock",
    "on_poweroff",
    "on_reboot",
    "on_crash",
    "on_lockfailure",
    "pm",
    "perf",
    "devices",
    "seclabel",
    "keywrap",
    "launchSecurity",
    "throttlegroups",
];

/// The most XML nodes a domain may have (a large domain has a few thousand); past it the
/// parser stops, whatever the document holds.
const NODES_LIMIT: u32 = 100_000;

/// Parses one domain definition (or a `<domstatus>` status file holding one); `path` names it in errors and problems.
pub fn parse(path: &str, text: &str) -> Result<Domain, DomainError> {
    let error = |message: String| DomainError {
        path: path.to_string(),
        message,
    };
    let options = roxmltree::ParsingOptions {
        allow_dtd: false,
        nodes_limit: NODES_LIMIT,
        ..roxmltree::ParsingOptions::default()
    };
    let doc = roxmltree::Document::parse_with_options(text, options).map_err(|e| {
        error(match e {
            roxmltree::Error::DtdDetected => "has a <!DOCTYPE>: document type declarations are \
                refused (entity expansion, external entities); remove it, libvirt never writes one"
                .to_string(),
            e => format!("not well-formed XML: {e}"),
        })
    })?;
    let top = doc.root_element();
    // A running domain's status file (/run/libvirt/qemu) wraps it in <domstatus>.
    let root = match top.tag_name().name() {
        "domain" => top,
        "domstatus" => child(Some(top), "domain").ok_or_else(|| {
            error("<domstatus> without a <domain> inside: not a libvirt status file".into())
        })?,
        other => {
            return Err(error(format!(
                "the root element is <{other}>, a libvirt domain's is <domain>"
            )));
        }
    };
    let dom = Some(root);
    let mut p = Parser {
        doc: &doc,
        path,
        problems: Vec::new(),
    };
    let name = child(dom, "name")
        .and_then(|n| n.text())
        .map_or_else(String::new, |t| t.trim().to_string());
    let vcpu = child(dom, "vcpu");
    let vcpus = match p.number(vcpu, None) {
        Some(n) => n,
        None => {
            return Err(error(
                "no <vcpu> count, or not a number: write <vcpu placement='static'>N</vcpu>".into(),
            ));
        }
    };
    let vcpu_cpuset = vcpu.and_then(|node| p.cpuset(node, "cpuset"));
    for node in root.children().filter(|n| n.is_element()) {
        let tag = node.tag_name();
        if tag.namespace().is_none() && !KNOWN.contains(&tag.name()) {
            let line = p.line(node);
            p.problems.push(format!(
                "unknown element <{}> under <domain> at line {line}: libvirt would reject it",
                tag.name()
            ));
        }
    }
    let cputune = child(dom, "cputune");
    let vcpupin = p.pins(cputune, "vcpupin", "vcpu");
    for pin in &vcpupin {
        if pin.id >= vcpus {
            p.problems.push(format!(
                "<vcpupin vcpu='{}'> names a vCPU beyond <vcpu>{vcpus}</vcpu> (vCPUs are 0 to {})",
                pin.id,
                vcpus.saturating_sub(1)
            ));
        }
    }
    let emulatorpin = child(cputune, "emulatorpin").and_then(|n| p.cpuset(n, "cpuset"));
    let iothreadpin = p.pins(cputune, "iothreadpin", "iothread");
    let vcpusched = children(cputune, "vcpusched")
        .filter_map(|node| {
            Some(VcpuSched {
                vcpus: p.cpuset(node, "vcpus")?,
                scheduler: node.attribute("scheduler").unwrap_or("other").to_string(),
                priority: node.attribute("priority").and_then(|v| v.parse().ok()),
            })
        })
        .collect();
    let cpu_node = child(dom, "cpu");
    let cpu = CpuModel {
        mode: cpu_node
            .and_then(|n| n.attribute("mode"))
            .map(str::to_string),
        topology: child(cpu_node, "topology").map(|t| {
            ["sockets", "dies", "cores", "threads"]
                .map(|a| t.attribute(a).and_then(|v| v.parse().ok()).unwrap_or(1))
        }),
        features: children(cpu_node, "feature")
            .map(|f| {
                (
                    f.attribute("policy").unwrap_or("require").to_string(),
                    f.attribute("name").unwrap_or_default().to_string(),
                )
            })
            .collect(),
    };
    let backing = child(dom, "memoryBacking");
    let hugepages = child(backing, "hugepages");
    let memory_backing = MemoryBacking {
        hugepages: hugepages.is_some(),
        pages: children(hugepages, "page")
            .filter_map(|page| {
                Some(HugePage {
                    size_kib: p.size_kib(page, page.attribute("size"))?,
                    nodeset: p.cpuset(page, "nodeset"),
                })
            })
            .collect(),
        locked: child(backing, "locked").is_some(),
        nosharepages: child(backing, "nosharepages").is_some(),
    };
    let memory = child(dom, "memory");
    let memory_kib = memory
        .and_then(|n| p.size_kib(n, n.text()))
        .unwrap_or_default();
    let hard_limit_kib =
        child(child(dom, "memtune"), "hard_limit").and_then(|n| p.size_kib(n, n.text()));
    let numatune = child(child(dom, "numatune"), "memory").map(|n| NumaTune {
        mode: n.attribute("mode").unwrap_or("strict").to_string(),
        nodeset: p.cpuset(n, "nodeset"),
    });
    let timers = children(child(dom, "clock"), "timer")
        .map(|t| Timer {
            name: t.attribute("name").unwrap_or_default().to_string(),
            present: t.attribute("present").map(|v| v == "yes"),
        })
        .collect();
    let pmu = child(child(dom, "features"), "pmu").map(|n| n.attribute("state") != Some("off"));
    let devices = read_devices(child(dom, "devices"));
    Ok(Domain {
        name,
        path: path.to_string(),
        vcpus,
        vcpu_cpuset,
        vcpupin,
        emulatorpin,
        iothreads: p.number(child(dom, "iothreads"), Some(0)).unwrap_or(0),
        iothreadpin,
        vcpusched,
        cpu,
        memory_kib,
        memory_backing,
        hard_limit_kib,
        numatune,
        timers,
        pmu,
        devices,
        problems: p.problems,
    })
}

fn read_devices(devices: Option<roxmltree::Node>) -> Devices {
    let attr = |n: roxmltree::Node, a: &str| n.attribute(a).unwrap_or_default().to_string();
    Devices {
        controllers: children(devices, "controller")
            .map(|c| (attr(c, "type"), c.attribute("model").map(str::to_string)))
            .collect(),
        channels: children(devices, "channel")
            .map(|c| {
                let target = child(Some(c), "target").and_then(|t| t.attribute("name"));
                (attr(c, "type"), target.map(str::to_string))
            })
            .collect(),
        sound: children(devices, "sound")
            .map(|s| attr(s, "model"))
            .collect(),
        memballoon: child(devices, "memballoon").map(|b| attr(b, "model")),
        graphics: children(devices, "graphics")
            .map(|g| attr(g, "type"))
            .collect(),
        serials: (children(devices, "serial").count() + children(devices, "console").count())
            as u32,
        usb_inputs: children(devices, "input")
            .filter(|i| i.attribute("bus") == Some("usb"))
            .map(|i| attr(i, "type"))
            .collect(),
    }
}

/// The first child element named `name` (no namespace) of `node`.
fn child<'a, 'i>(
    node: Option<roxmltree::Node<'a, 'i>>,
    name: &str,
) -> Option<roxmltree::Node<'a, 'i>> {
    children(node, name).next()
}

/// The child elements named `name` of `node`.
fn children<'a, 'i>(
    node: Option<roxmltree::Node<'a, 'i>>,
    name: &str,
) -> impl Iterator<Item = roxmltree::Node<'a, 'i>> {
    node.into_iter()
        .flat_map(|n| n.children())
        .filter(move |n| n.is_element() && n.tag_name().name() == name)
}

/// Attribute and text parsing that records what it cannot read as a problem with its line.
struct Parser<'d, 'i> {
    doc: &'d roxmltree::Document<'i>,
    path: &'d str,
    problems: Vec<String>,
}

impl Parser<'_, '_> {
    fn line(&self, node: roxmltree::Node) -> u32 {
        self.doc.text_pos_at(node.range().start).row
    }

    fn problem(&mut self, node: roxmltree::Node, what: String) {
        let line = self.line(node);
        self.problems.push(format!(
            "<{}> at {}:{line}: {what}",
            node.tag_name().name(),
            self.path
        ));
    }

    /// The element's text as a number; `absent` when the element is missing.
    fn number(&mut self, node: Option<roxmltree::Node>, absent: Option<u32>) -> Option<u32> {
        let Some(node) = node else { return absent };
        let text = node.text().unwrap_or_default().trim();
        match text.parse() {
            Ok(n) => Some(n),
            Err(_) => {
                self.problem(node, format!("'{text}' is not a count"));
                None
            }
        }
    }

    /// A CPU or node list attribute.
    fn cpuset(&mut self, node: roxmltree::Node, attribute: &str) -> Option<CpuSet> {
        let value = node.attribute(attribute)?;
        match libvirt_list(value) {
            Some(set) => Some(set),
            None => {
                self.problem(node, format!("{attribute}='{value}' is not a CPU list"));
                None
            }
        }
    }

    /// `<vcpupin vcpu='N' cpuset='...'>` or `<iothreadpin iothread='N' cpuset='...'>`.
    fn pins(&mut self, cputune: Option<roxmltree::Node>, tag: &str, id: &str) -> Vec<Pin> {
        children(cputune, tag)
            .filter_map(|node| {
                let number = node.attribute(id).and_then(|v| v.parse().ok());
                let Some(number) = number else {
                    self.problem(node, format!("needs a numeric {id}='N' attribute"));
                    return None;
                };
                Some(Pin {
                    id: number,
                    cpuset: self.cpuset(node, "cpuset")?,
                })
            })
            .collect()
    }

    /// A size with libvirt's `unit` attribute (KiB when absent), in KiB.
    fn size_kib(&mut self, node: roxmltree::Node, value: Option<&str>) -> Option<u64> {
        let value = value.unwrap_or_default().trim();
        let unit = node.attribute("unit").unwrap_or("KiB");
        match (value.parse::<u64>(), unit_bytes(unit)) {
            (Ok(n), Some(bytes)) => Some(n.saturating_mul(bytes) / 1024),
            _ => {
                self.problem(node, format!("'{value}' {unit} is not a size"));
                None
            }
        }
    }
}

/// libvirt's unit names (formatdomain "memory"), in bytes.
fn unit_bytes(unit: &str) -> Option<u64> {
    Some(match unit {
        "b" | "bytes" => 1,
        "KB" => 1000,
        "k" | "KiB" => 1 << 10,
        "MB" => 1_000_000,
        "M" | "MiB" => 1 << 20,
        "GB" => 1_000_000_000,
        "G" | "GiB" => 1 << 30,
        "TB" => 1_000_000_000_000,
        "T" | "TiB" => 1 << 40,
        _ => return None,
    })
}

/// libvirt's CPU list: the kernel's list form plus `^N` exclusions (`0-7,^3`).
fn libvirt_list(text: &str) -> Option<CpuSet> {
    let (exclude, include): (Vec<&str>, Vec<&str>) = text
        .split(',')
        .map(str::trim)
        .partition(|t| t.starts_with('^'));
    let mut set = CpuSet::parse_list(&include.join(",")).ok()?;
    for token in exclude {
        set = set.difference(&CpuSet::parse_list(&token[1..]).ok()?);
    }
    Some(set)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEED: &str = r#"<domain type='kvm'>
  <name>rt-vm</name>
  <memory unit='GiB'>32</memory>
  <memoryBacking><hugepages><page size='1' unit='G' nodeset='0'/></hugepages><locked/><nosharepages/></memoryBacking>
  <vcpu placement='static'>4</vcpu>
  <cputune>
    <vcpupin vcpu='0' cpuset='4'/><vcpupin vcpu='1' cpuset='5'/>
    <vcpupin vcpu='2' cpuset='6'/><vcpupin vcpu='3' cpuset='7'/>
    <emulatorpin cpuset='0-1'/>
    <vcpusched vcpus='0-3,^0,^1' scheduler='fifo' priority='1'/>
  </cputune>
  <cpu mode='host-passthrough'><topology sockets='1' cores='4' threads='1'/><feature policy='require' name='tsc-deadline'/></cpu>
  <clock offset='utc'><timer name='kvmclock' present='no'/></clock>
  <features><pmu state='off'/></features>
  <devices><controller type='usb' model='none'/><memballoon model='none'/></devices>
</domain>"#;

    #[test]
    fn reads_the_seed_domain() {
        let d = parse("rt-vm.xml", SEED).unwrap();
        assert_eq!(d.name, "rt-vm");
        assert_eq!(d.vcpus, 4);
        assert_eq!(d.memory_kib, 32 << 20);
        assert_eq!(d.vcpupin.len(), 4);
        assert_eq!(d.vcpupin[2].cpuset.to_list(), "6");
        assert_eq!(d.emulatorpin.as_ref().unwrap().to_list(), "0-1");
        assert_eq!(d.vcpusched[0].vcpus.to_list(), "2-3");
        assert_eq!(d.vcpusched[0].scheduler, "fifo");
        assert_eq!(d.cpu.mode.as_deref(), Some("host-passthrough"));
        assert_eq!(d.cpu.topology, Some([1, 1, 4, 1]));
        assert_eq!(d.memory_backing.pages[0].size_kib, 1 << 20);
        assert!(d.memory_backing.locked && d.memory_backing.nosharepages);
        assert_eq!(d.pmu, Some(false));
        assert_eq!(d.timers[0].present, Some(false));
        assert_eq!(d.devices.memballoon.as_deref(), Some("none"));
        assert!(d.problems.is_empty(), "{:?}", d.problems);
    }

    #[test]
    fn billion_laughs_and_external_entities_are_refused() {
        let laughs = r#"<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
]>
<domain><name>&lol4;</name><vcpu>1</vcpu></domain>"#;
        let err = parse("laughs.xml", laughs).unwrap_err();
        assert!(
            err.to_string().starts_with("laughs.xml: has a <!DOCTYPE>"),
            "{err}"
        );
        let external = r#"<!DOCTYPE domain [<!ENTITY x SYSTEM "file:///etc/shadow">]>
<domain><name>&x;</name><vcpu>1</vcpu></domain>"#;
        assert!(parse("ext.xml", external).is_err());
    }

    #[test]
    fn malformed_and_odd_domains_name_file_and_element() {
        let err = parse("bad.xml", "<domain><name>x</domain>").unwrap_err();
        assert!(err.message.contains("not well-formed"), "{err}");
        assert!(err.message.contains("1:"), "position in {err}");
        let err = parse("net.xml", "<network/>").unwrap_err();
        assert!(err.message.contains("<network>"), "{err}");
        let odd = "<domain>\n<name>x</name>\n<vcpu>2</vcpu>\n<vcpupinn/>\n\
            <cputune><vcpupin vcpu='5' cpuset='3'/><emulatorpin cpuset='x'/></cputune></domain>";
        let d = parse("odd.xml", odd).unwrap();
        assert_eq!(d.problems.len(), 3, "{:?}", d.problems);
        assert!(d.problems[0].contains("<vcpupinn> under <domain> at line 4"));
        assert!(
            d.problems
                .iter()
                .any(|p| p.contains("vcpu='5'") && p.contains("0 to 1"))
        );
        assert!(
            d.problems
                .iter()
                .any(|p| p.contains("<emulatorpin> at odd.xml:5"))
        );
    }

    proptest::proptest! {
        /// Any text, and any mangling of a real domain, parses or is an error: never a panic.
        #[test]
        fn never_panics(text in ".{0,400}", cut in 0usize..2000, junk in "[<>/'=a-z ]{0,12}") {
            let _ = parse("any.xml", &text);
            let mut seed = SEED.to_string();
            let at = (0..=cut.min(seed.len())).rev().find(|&i| seed.is_char_boundary(i)).unwrap_or(0);
            seed.insert_str(at, &junk);
            let _ = parse("mangled.xml", &seed);
        }
    }

    #[test]
    fn units_and_exclusions() {
        assert_eq!(unit_bytes("GiB"), Some(1 << 30));
        assert_eq!(unit_bytes("parsec"), None);
        assert_eq!(libvirt_list("0-7,^3,^5").unwrap().to_list(), "0-2,4,6-7");
        assert!(libvirt_list("999x").is_none());
    }
}

//! Services: a systemd unit enabled, disabled, stopped, masked or started with `systemctl`,
//! only on the live machine. The journal keeps what `is-enabled` and `is-active` said, and
//! revert brings both back (unmasking, enabling or disabling, starting or stopping).

use std::path::PathBuf;

use super::Expansion;
use crate::apply::change::{ApplyContext, Change, ChangeError, Inspection, Unsupported};
use crate::apply::command::Runner;
use crate::apply::journal::Record;
use crate::tuning::setting_id::SettingId;

/// What a unit should be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Want {
    /// Started at boot (`systemctl enable`).
    Enabled,
    /// Not started at boot and not running (`systemctl disable --now`).
    Disabled,
    /// Not running (`systemctl stop`); its boot setting is kept.
    Stopped,
    /// Cannot be started at all, and not running (`systemctl mask --now`).
    Masked,
    /// Running (`systemctl start`).
    Running,
}

impl Want {
    /// Parses a setting value.
    pub(crate) fn parse(text: &str) -> Option<Want> {
        Some(match text {
            "enabled" => Want::Enabled,
            "disabled" => Want::Disabled,
            "stopped" => Want::Stopped,
            "masked" => Want::Masked,
            "running" => Want::Running,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            Want::Enabled => "enabled",
            Want::Disabled => "disabled",
            Want::Stopped => "stopped",
            Want::Masked => "masked",
            Want::Running => "running",
        }
    }
}

/// A unit's state as systemctl reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct State {
    /// `systemctl is-enabled`: `enabled`, `disabled`, `masked`, `static`, ... or `not-found`.
    pub enablement: String,
    /// Whether `systemctl is-active` says it is active (or activating, reloading).
    pub active: bool,
}

impl State {
    /// Whether the state is what `want` asks for. A unit that is not installed is as good as
    /// disabled, stopped and masked.
    pub(crate) fn satisfies(&self, want: Want) -> bool {
        let absent = self.enablement == "not-found";
        match want {
            Want::Enabled => self.enablement == "enabled",
            Want::Disabled => absent || (self.enablement != "enabled" && !self.active),
            Want::Stopped => !self.active,
            Want::Masked => absent || (self.enablement == "masked" && !self.active),
            Want::Running => self.active,
        }
    }

    fn shown(&self) -> String {
        format!(
            "{}, {}",
            self.enablement,
            if self.active { "active" } else { "inactive" }
        )
    }
}

/// Runs systemctl.
struct Systemctl<'a> {
    runner: &'a dyn Runner,
    path: PathBuf,
}

impl Systemctl<'_> {
    fn query(&self, verb: &str, unit: &str) -> Result<String, ChangeError> {
        let out = self
            .runner
            .run(&self.path, &[verb.to_string(), unit.to_string()])
            .map_err(|e| ChangeError::Failed(format!("systemctl {verb} {unit}: {e}")))?;
        Ok(out.stdout.lines().next().unwrap_or("").trim().to_string())
    }

    fn state(&self, unit: &str) -> Result<State, ChangeError> {
        let enablement = match self.query("is-enabled", unit)? {
            // systemctl prints nothing on stdout (an error on stderr) for an unknown unit.
            text if text.is_empty() => "not-found".to_string(),
            text => text,
        };
        let active = matches!(
            self.query("is-active", unit)?.as_str(),
            "active" | "activating" | "reloading"
        );
        Ok(State { enablement, active })
    }

    fn run(&self, args: &[&str], unit: &str) -> Result<(), ChangeError> {
        let mut argv: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        argv.push(unit.to_string());
        let shown = crate::apply::command::shown("systemctl", &argv);
        match self.runner.run(&self.path, &argv) {
            Ok(out) if out.success() => Ok(()),
            Ok(out) => Err(ChangeError::Refused(format!(
                "`{shown}` failed: {}",
                out.message()
            ))),
            Err(e) => Err(ChangeError::Failed(format!("`{shown}` could not run: {e}"))),
        }
    }
}

fn systemctl<'a>(ctx: &ApplyContext<'a>) -> Result<Systemctl<'a>, Unsupported> {
    let Some(runner) = ctx.runner else {
        return Err(Unsupported::ServicesNotLive);
    };
    let path = runner.find("systemctl").ok_or(Unsupported::NoSystemctl)?;
    Ok(Systemctl { runner, path })
}

/// Bringing a unit to a state.
pub(crate) struct ServiceChange {
    /// The unit.
    pub unit: String,
    /// The state.
    pub want: Want,
}

impl Change for ServiceChange {
    fn target(&self) -> String {
        format!("service {}", self.unit)
    }

    fn desired(&self) -> String {
        self.want.name().to_string()
    }

    fn supported(&self, ctx: &ApplyContext) -> Result<(), Unsupported> {
        systemctl(ctx).map(|_| ())
    }

    fn inspect(&self, ctx: &ApplyContext) -> Result<Inspection, ChangeError> {
        let systemctl = systemctl(ctx).map_err(|e| ChangeError::Refused(e.to_string()))?;
        let state = systemctl.state(&self.unit)?;
        Ok(Inspection {
            current: state.shown(),
            in_place: state.satisfies(self.want),
            prior: vec![Record::Service {
                unit: self.unit.clone(),
                enablement: state.enablement.clone(),
                active: state.active,
            }],
        })
    }

    fn apply(&self, ctx: &ApplyContext) -> Result<(), ChangeError> {
        let systemctl = systemctl(ctx).map_err(|e| ChangeError::Refused(e.to_string()))?;
        let unit = &self.unit;
        match self.want {
            Want::Enabled => {
                if systemctl.state(unit)?.enablement == "masked" {
                    systemctl.run(&["unmask"], unit)?;
                }
                systemctl.run(&["enable"], unit)
            }
            Want::Disabled => systemctl.run(&["disable", "--now"], unit),
            Want::Stopped => systemctl.run(&["stop"], unit),
            Want::Masked => systemctl.run(&["mask", "--now"], unit),
            Want::Running => systemctl.run(&["start"], unit),
        }
    }
}

/// Brings a unit back to the state a journal record found: its enablement first, then
/// whether it runs. Returns whether anything changed.
pub(crate) fn restore(ctx: &ApplyContext, unit: &str, prior: &State) -> Result<bool, ChangeError> {
    let systemctl = systemctl(ctx).map_err(|e| ChangeError::Refused(e.to_string()))?;
    let now = systemctl.state(unit)?;
    let mut changed = false;
    if now.enablement != prior.enablement {
        if now.enablement == "masked" {
            systemctl.run(&["unmask"], unit)?;
        }
        match prior.enablement.as_str() {
            "masked" => systemctl.run(&["mask"], unit)?,
            "enabled" => systemctl.run(&["enable"], unit)?,
            "disabled" => systemctl.run(&["disable"], unit)?,
            // static, indirect, generated, not-found: nothing to enable or disable.
            _ => {}
        }
        changed = true;
    }
    if now.active != prior.active {
        systemctl.run(&[if prior.active { "start" } else { "stop" }], unit)?;
        changed = true;
    }
    Ok(changed)
}

/// The change of a `service:` target; `None` for other targets.
pub(crate) fn expand(ctx: &ApplyContext, target: &SettingId, value: &str) -> Option<Expansion> {
    let SettingId::Service(unit) = target else {
        return None;
    };
    let Some(want) = Want::parse(value) else {
        return Some(Expansion::Invalid(format!(
            "'{value}' is not enabled, disabled, stopped, masked or running"
        )));
    };
    let change = ServiceChange {
        unit: unit.clone(),
        want,
    };
    Some(match change.supported(ctx) {
        Ok(()) => Expansion::Changes(vec![Box::new(change)]),
        Err(why) => Expansion::Unsupported(why.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apply::command::fake::{FakeRunner, status};
    use crate::machine::Machine;
    use crate::sysroot::SysRoot;
    use std::cell::RefCell;

    /// A pretend systemd holding one unit's state.
    fn systemd(
        state: &RefCell<State>,
    ) -> impl Fn(&str, &[String]) -> crate::apply::command::Output + '_ {
        move |_program, args| {
            let mut s = state.borrow_mut();
            let ok = status(0, "");
            match args.first().map(String::as_str) {
                Some("is-enabled") => {
                    let code = if s.enablement == "enabled" { 0 } else { 1 };
                    status(code, &format!("{}\n", s.enablement))
                }
                Some("is-active") => {
                    let text = if s.active { "active" } else { "inactive" };
                    status(if s.active { 0 } else { 3 }, &format!("{text}\n"))
                }
                Some("mask") => {
                    s.enablement = "masked".into();
                    if args.iter().any(|a| a == "--now") {
                        s.active = false;
                    }
                    ok
                }
                Some("unmask") => {
                    s.enablement = "enabled".into();
                    ok
                }
                Some("enable") => {
                    s.enablement = "enabled".into();
                    ok
                }
                Some("disable") => {
                    s.enablement = "disabled".into();
                    ok
                }
                Some("stop") => {
                    s.active = false;
                    ok
                }
                Some("start") => {
                    s.active = true;
                    ok
                }
                _ => status(1, ""),
            }
        }
    }

    #[test]
    fn masks_and_restores_a_running_enabled_unit() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("run/systemd/system")).unwrap();
        let root = SysRoot::dir(dir.path());
        let machine = Machine::read(&root);
        let state = RefCell::new(State {
            enablement: "enabled".into(),
            active: true,
        });
        let runner = FakeRunner {
            installed: vec!["systemctl"],
            answer: systemd(&state),
            calls: RefCell::new(Vec::new()),
        };
        let ctx = ApplyContext {
            root: &root,
            machine: &machine,
            runner: Some(&runner),
        };
        let change = ServiceChange {
            unit: "irqbalance".into(),
            want: Want::Masked,
        };
        let inspection = change.inspect(&ctx).unwrap();
        assert!(!inspection.in_place);
        assert_eq!(inspection.current, "enabled, active");
        change.apply(&ctx).unwrap();
        assert!(change.inspect(&ctx).unwrap().in_place);
        let prior = State {
            enablement: "enabled".into(),
            active: true,
        };
        assert!(restore(&ctx, "irqbalance", &prior).unwrap());
        assert_eq!(*state.borrow(), prior);
        assert!(!restore(&ctx, "irqbalance", &prior).unwrap());
        assert!(
            runner
                .calls
                .borrow()
                .iter()
                .any(|c| c == "systemctl mask --now irqbalance")
        );
    }

    #[test]
    fn a_tree_or_a_machine_without_systemctl_is_unsupported() {
        let dir = tempfile::tempdir().unwrap();
        let root = SysRoot::dir(dir.path());
        let machine = Machine::read(&root);
        let ctx = ApplyContext {
            root: &root,
            machine: &machine,
            runner: None,
        };
        let target = SettingId::Service("irqbalance".into());
        assert!(matches!(
            expand(&ctx, &target, "masked"),
            Some(Expansion::Unsupported(_))
        ));
        assert!(matches!(
            expand(&ctx, &target, "gone"),
            Some(Expansion::Invalid(_))
        ));
        let runner = FakeRunner {
            installed: vec![],
            answer: |_: &str, _: &[String]| status(0, ""),
            calls: RefCell::new(Vec::new()),
        };
        let ctx = ApplyContext {
            runner: Some(&runner),
            ..ctx
        };
        match expand(&ctx, &target, "masked") {
            Some(Expansion::Unsupported(why)) => {
                assert!(why.contains("systemctl is not installed"))
            }
            _ => panic!("expected unsupported"),
        }
    }
}
